"""Deadlines on APScheduler: one job per deadline, replaced when the deadline moves.

The database is the source of truth; callers rebuild every job from it at start-up, so a restart loses no
timer, and a deadline that passed while the process was down fires as soon as it is scheduled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.date import DateTrigger


class Timers:
    def __init__(self) -> None:
        self._scheduler = AsyncIOScheduler(timezone=UTC)

    def start(self) -> None:
        self._scheduler.start()

    def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    def at(self, job_id: str, when: float, callback: Callable[..., Awaitable[None]], *args: object) -> None:
        """Run ``callback(*args)`` at ``when`` (epoch seconds); a past time runs at once."""
        self._scheduler.add_job(
            callback,
            DateTrigger(run_date=datetime.fromtimestamp(when, UTC)),
            args=args,
            id=job_id,
            replace_existing=True,
            misfire_grace_time=None,
            coalesce=True,
        )

    def cancel(self, job_id: str) -> None:
        try:
            self._scheduler.remove_job(job_id)
        except JobLookupError:
            pass
