"""What the core tells the process after a commit, and work nobody awaits.

The core tells that a run changed, outbox rows were added, or something progressed. The follow-up work nobody awaits
is kept referenced, and its failure logged."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog

from bot.waiting import wait_set

log = structlog.get_logger(__name__)
T = TypeVar("T")


class Signals:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._run_listeners: list[Callable[[str], None]] = []
        self._outbox_listeners: list[Callable[[], None]] = []
        self._changed = asyncio.Event()
        self._background: set[asyncio.Future[object]] = set()

    def add_run_listener(self, listener: Callable[[str], None]) -> None:
        self._run_listeners.append(listener)

    def add_outbox_listener(self, listener: Callable[[], None]) -> None:
        self._outbox_listeners.append(listener)

    def run_changed(self, run_id: str) -> None:
        for listener in self._run_listeners:
            listener(run_id)

    def outbox_changed(self) -> None:
        for listener in self._outbox_listeners:
            listener()

    def progressed(self) -> None:
        """Wake everyone in :meth:`wait_for` to check again."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for(self, check: Callable[[], Awaitable[T | None]], timeout: float) -> T | None:
        """Wait until ``check()`` returns something (re-checked whenever a run progresses), or ``None`` at timeout."""
        deadline = self._clock() + timeout
        while True:
            changed = self._changed
            found = await check()
            remaining = deadline - self._clock()
            if found is not None or remaining <= 0:
                return found
            await wait_set(changed, remaining)

    def background(self, work: Awaitable[object]) -> None:
        """Follow-up work after a commit that nobody awaits."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Future[object]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background_work_failed", exc_info=task.exception())

    async def close(self) -> None:
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
