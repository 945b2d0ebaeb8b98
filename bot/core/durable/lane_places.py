"""Durable runs' places in the sub-agent lane: claimed as a run is stored, so it starts at once.

A spawn finds a free place in the transaction that stores its run (when no lane run waits before it in line): its
workflow starts directly, with no trip through a queue. A run that finds none waits in line in our tables
(:mod:`storage.lane_places`), holding no memory in any process; as places free up, the process where one freed hands
them to the runs first in line (and every process looks every ``[durability] queue_poll_seconds``, for places freed
elsewhere), and starts their workflows. The places are counted across processes, so ``max_concurrent`` and
``max_concurrent_per_process`` bound the runs executing however they started.

Not DBOS's queue: it counts only the workflows it handed out itself. Beside runs started directly it would either let
more than ``max_concurrent`` run, or hand its first runs out early to wait for a place, ahead of a member who comes
later with fewer runs in line. Main-agent turns still wait in DBOS's chat queue (``durable.run_queues``).
"""

from __future__ import annotations

from bot.config import SubagentDefaults
from bot.records import Run, RunKind
from storage.db import Connection
from storage.lane_places import LaneLimits
from storage.repositories import Repositories


class LanePlaces:
    def __init__(
        self, repos: Repositories, lane: SubagentDefaults, executor_id: str, look_again_seconds: float
    ) -> None:
        self._repos = repos
        self._executor_id = executor_id
        self._limits = LaneLimits(lane.max_concurrent, lane.max_concurrent_per_process)
        self.look_again_seconds = look_again_seconds  # for places freed in other processes

    @staticmethod
    def in_lane(run: Run, *, delegated: bool) -> bool:
        """Whether a run waits for the sub-agent lane.

        A delegated child runs inside its caller's place."""
        return not delegated and run.kind is not RunKind.CHAT

    def held_here(self, run: Run) -> bool:
        """Whether ``run`` holds a place for this process."""
        return run.lane_place == self._executor_id

    async def join(self, tx: Connection, run: Run, *, delegated: bool) -> bool:
        """In the transaction storing a lane run: put it in line, and give it a free place if it is first."""
        if not self.in_lane(run, delegated=delegated):
            return False
        await self._repos.lane_places.join(tx, run.id, run.requester_user_id, run.created_at)
        return await self._repos.lane_places.claim(tx, run.id, self._limits)

    async def hand_out(self) -> list[tuple[str, bool]]:
        """The free places, given to the runs first in line: each run, and whether it was woken."""
        if not await self._repos.lane_places.anyone_waiting():
            return []
        async with self._repos.db.transaction() as tx:
            return await self._repos.lane_places.hand_out(tx, self._limits)

    async def line(self) -> list[str]:
        return await self._repos.lane_places.line()
