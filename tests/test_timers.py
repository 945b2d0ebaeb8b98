"""Timers on APScheduler: a job may set itself again from inside its own run, even for a time already come, and a job
runs in a context of its own, not in the one of the task that set it."""

from __future__ import annotations

import asyncio
import contextvars
import time

import structlog

from bot.core.deadline_sweep import DeadlineSweep
from bot.core.timers import Timers
from tests.polling import eventually, stays

current_run: contextvars.ContextVar[str | None] = contextvars.ContextVar("current_run", default=None)


async def test_a_job_that_sets_itself_again_for_a_time_already_come_runs_again():
    timers = Timers()
    timers.start()
    fired: list[float] = []

    async def again() -> None:
        fired.append(time.time())
        if len(fired) < 3:
            timers.at("again", time.time() - 1, again)  # due before this run has even returned

    try:
        timers.at("again", time.time(), again)
        await eventually(lambda: len(fired) == 3, timeout=5, describe="three runs of the job")
        await stays(lambda: len(fired) == 3, for_seconds=0.2, describe="no fourth run")
        assert len(fired) == 3
    finally:
        timers.shutdown()


async def test_a_job_does_not_run_in_the_context_of_the_task_that_set_it():
    timers = Timers()
    timers.start()
    seen: list[tuple[str | None, dict]] = []

    async def job() -> None:
        seen.append((current_run.get(), structlog.contextvars.get_contextvars()))

    async def a_run() -> None:
        current_run.set("run-1")
        with structlog.contextvars.bound_contextvars(run_id="run-1"):
            timers.at("job", time.time() + 0.05, job)
            await asyncio.sleep(0.3)  # still running (and so the one that woke the scheduler) when the job is due

    try:
        await a_run()
        assert seen == [(None, {})]
    finally:
        timers.shutdown()


async def test_a_deadline_written_during_a_sweep_and_due_by_its_end_is_swept_at_once():
    timers = Timers()
    timers.start()
    deadlines = {"a": time.time()}
    swept: list[str] = []

    async def next_due() -> float | None:
        return min(deadlines.values(), default=None)

    async def sweep(now: float) -> None:
        for key in [key for key, when in deadlines.items() if when <= now]:
            del deadlines[key]
            swept.append(key)
        if swept == ["a"]:  # another row's deadline, written meanwhile, comes before this sweep ends
            deadlines["b"] = time.time()
            await asyncio.sleep(0.05)

    deadline_sweep = DeadlineSweep("test", timers, time.time, next_due, sweep)
    try:
        await deadline_sweep.start()
        await eventually(lambda: swept == ["a", "b"], timeout=5, describe="both rows swept")
    finally:
        timers.shutdown()
