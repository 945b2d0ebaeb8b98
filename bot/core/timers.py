"""Deadlines and recurring schedules on APScheduler: one job per deadline (replaced when it moves), per table of
deadlines swept together (:mod:`bot.core.deadline_sweep`), or per schedule.

The database is the source of truth; callers rebuild every job from it at start-up, so a restart loses no
timer, and a deadline that passed while the process was down fires as soon as it is scheduled.

Every job runs in a context of its own: APScheduler starts a job from whichever task last woke it, so a job would
otherwise carry that task's context — a run's bound log fields, or DBOS's workflow context when the task was a
durable run's.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import sys
from collections.abc import Callable, Coroutine, Iterator
from datetime import UTC, datetime

import structlog
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.date import DateTrigger

EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)

log = structlog.get_logger(__name__)

Job = Callable[..., Coroutine[object, object, object]]  # an async function a timer calls
ANY_NUMBER = sys.maxsize  # of one deadline's job running at once (see Timers.at)


def instant(when: float) -> datetime:
    """``when`` (epoch seconds) as a UTC datetime, clamped to the range a datetime holds.

    A deadline past the calendar's end (e.g. a row written before lifetimes were bounded) is never reached, one before
    its start has passed. Neither raises, so one such row cannot stop a timer from being set or the bot from
    starting."""
    try:
        return datetime.fromtimestamp(when, UTC)
    except (OverflowError, ValueError, OSError):
        return EARLIEST if when < 0 else LATEST


class Timers:
    def __init__(self) -> None:
        self._scheduler = AsyncIOScheduler(timezone=UTC)

    def start(self) -> None:
        self._scheduler.start()

    def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    def at(self, job_id: str, when: float, callback: Job, *args: object) -> None:
        """Run ``callback(*args)`` at ``when`` (epoch seconds); a past time runs at once, one a datetime cannot
        hold is clamped to the nearest that it can (and logged). A callback may set its own job again, even for a
        time already come, before it returns: APScheduler would skip (and so drop) a one-shot job due while an
        instance of it still runs, so instances of one job may overlap; callbacks end their rows by
        compare-and-set."""
        run_date = instant(when)
        if run_date in (EARLIEST, LATEST):
            log.warning("timer_clamped", job_id=job_id, when=when, run_date=run_date.isoformat())
        self._scheduler.add_job(
            _in_own_context,
            DateTrigger(run_date=run_date),
            args=(callback, *args),
            id=job_id,
            replace_existing=True,
            misfire_grace_time=None,
            coalesce=True,
            max_instances=ANY_NUMBER,
        )

    def recurring(self, job_id: str, trigger: BaseTrigger, callback: Job, *args: object) -> None:
        """Run ``callback(*args)`` whenever ``trigger`` fires; a run late by any amount still runs, once."""
        self._scheduler.add_job(
            _in_own_context,
            trigger,
            args=(callback, *args),
            id=job_id,
            replace_existing=True,
            misfire_grace_time=None,
            coalesce=True,
        )

    def cancel(self, job_id: str) -> None:
        with contextlib.suppress(JobLookupError):
            self._scheduler.remove_job(job_id)


async def _in_own_context(callback: Job, *args: object) -> None:
    await asyncio.get_running_loop().create_task(callback(*args), context=contextvars.Context())


@contextlib.contextmanager
def skipped_if_bad(what: str, **row: object) -> Iterator[None]:
    """Start-up goes on past one row it cannot use (say, a corrupt deadline): the row is logged and skipped."""
    try:
        yield
    except Exception:
        log.exception("startup_row_skipped", what=what, **row)
