"""Durable runs off: a sub-agent lane run waits in this process's fair lane as an entry, not as a task.

A run waiting for its slot is its run id, member and top-level run in the lane's buckets (``runs.fair_lane``): no task,
no coroutine, no run or session held. Its task starts once the lane gives it a slot; it reads the run again then (a
kill may have ended it meanwhile) and gives the slot back however it ends: completed, failed, killed, or stopped with
the process. Any other run (a main-agent turn, a delegated child) starts at once.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

import structlog

from bot.core.durable.lane_places import LanePlaces
from bot.core.runs.fair_lane import FairLane
from bot.records import Run, RunStatus, Session
from storage.repositories import Repositories

log = structlog.get_logger(__name__)
Found = tuple[Run, Session]
Start = Callable[[str, bool, Found | None], asyncio.Task[object]]  # (run id, woken, its run read just before)


async def found_run(repos: Repositories, run_id: str) -> Found | None:
    """A run and its session, ``None`` when either is gone."""
    run = await repos.runs.get(run_id)
    session = await repos.sessions.get(run.session_key) if run is not None else None
    return None if run is None or session is None else (run, session)


def in_lane(found: Found | None) -> bool:
    """Whether a run found waits for the sub-agent lane."""
    return found is not None and LanePlaces.in_lane(found[0], delegated=found[1].delegation is not None)


class WaitingHere:
    def __init__(self, repos: Repositories, lane: FairLane, start: Start) -> None:
        self._repos = repos
        self._lane = lane
        self._start = start  # the run's task, tracked by its launcher
        # shared by every entry waiting: one object each way, not one per run
        self._granted = (
            functools.partial(self._granted_slot, wake=False),
            functools.partial(self._granted_slot, wake=True),
        )

    async def place(self, run_id: str, wake: bool) -> None:
        """Put a lane run in the fair lane; start any other run now.

        A lane run's task starts once it holds a slot."""
        try:
            found = await found_run(self._repos, run_id)
            root = await self._repos.runs.root_of(run_id) if in_lane(found) else None
        except Exception:  # the store failed us: the run stays queued, settled as interrupted at the next start
            log.exception("run_not_started", run_id=run_id, wake=wake)
            return
        if found is None or (not wake and found[0].status is not RunStatus.QUEUED):  # killed or ended meanwhile
            return
        if root is None:
            self._start(run_id, wake, found)
        else:
            self._lane.join(run_id, found[0].requester_user_id, root, self._granted[wake])

    def _granted_slot(self, run_id: str, *, wake: bool) -> None:
        self._start(run_id, wake, None).add_done_callback(lambda _: self._lane.release(run_id))
