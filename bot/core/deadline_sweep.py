"""One timer for a table of deadlines: it wakes at the earliest, hands every due row to the table's owner, then
sleeps until the next. A hundred thousand thread bindings are one APScheduler job, not a hundred thousand added (and
logged) one by one at start-up; due rows are found through an index on the deadline column.

Every process sharing the database runs its own sweep, and the owner ends a row by compare-and-set, so one process
does. A deadline written by another process is seen at this one's next sweep, at most ``MAX_SLEEP`` later (its
writer, when alive, wakes for it itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from bot.core.timers import Timers

log = structlog.get_logger(__name__)

MAX_SLEEP = 300.0  # seconds: the longest a sweep sleeps, so deadlines written by other processes are seen
RETRY = 5.0  # seconds before a row that stayed due after a sweep (its owner failed to end it) is tried again


class DeadlineSweep:
    def __init__(
        self,
        name: str,
        timers: Timers,
        clock: Callable[[], float],
        next_due: Callable[[], Awaitable[float | None]],
        sweep: Callable[[float], Awaitable[None]],
    ) -> None:
        """``next_due()``: the earliest deadline in the table, if any; ``sweep(now)``: end every row due by ``now``."""
        self._job_id = f"sweep:{name}"
        self._timers = timers
        self._clock = clock
        self._next_due = next_due
        self._sweep = sweep
        self._armed: float | None = None
        self._sweeping = asyncio.Lock()  # one sweep at a time: a deadline written during one may fire meanwhile

    async def start(self) -> None:
        await self._arm(after_sweep_at=None)

    def moved(self, when: float) -> None:
        """A deadline at ``when`` was written: wake for it if it comes before the one this sweep waits for."""
        if self._armed is None or when < self._armed:
            self._set(when)

    async def _fire(self) -> None:
        async with self._sweeping:
            self._armed = None
            now = self._clock()
            try:
                await self._sweep(now)
                await self._arm(after_sweep_at=now)
            except Exception:
                log.exception("deadline_sweep_failed", job_id=self._job_id)
                self._set(self._clock() + RETRY)

    async def _arm(self, *, after_sweep_at: float | None) -> None:
        due = await self._next_due()
        latest = self._clock() + MAX_SLEEP
        when = latest if due is None else min(due, latest)
        if after_sweep_at is not None and when <= after_sweep_at:  # left due by the sweep that just ran
            when = self._clock() + RETRY
        self._set(when)

    def _set(self, when: float) -> None:
        self._armed = when
        self._timers.at(self._job_id, when, self._fire)
