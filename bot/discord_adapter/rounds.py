"""A background task doing a round of Discord work each time it is woken.

It does at most one round per ``interval``.

Closing lets a round in progress finish, for a few seconds: a message it posted must be recorded, or a restart would
post it again. A round that fails (its database unreachable for a while, say) is logged, and the next one tries
again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog

from bot.waiting import wait_set

CLOSE_WAIT_SECONDS = 5

log = structlog.get_logger(__name__)


class Rounds:
    def __init__(self, name: str, work: Callable[[], Awaitable[None]], *, interval: float = 0.0) -> None:
        self._name = name
        self._work = work
        self._interval = interval
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._wake.set()
        self._task = asyncio.create_task(self._loop(), name=self._name)

    async def close(self) -> None:
        if self._task is None:
            return
        self._stop.set()
        self._wake.set()
        try:
            async with asyncio.timeout(CLOSE_WAIT_SECONDS):  # not wait_for: see bot.waiting
                await asyncio.shield(self._task)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                await self._work()
            except Exception:
                log.exception("round_failed", rounds=self._name)
            await wait_set(self._stop, self._interval)
