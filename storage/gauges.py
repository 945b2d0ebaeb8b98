"""Gauges repository: the counts the metrics read from the store, all processes' alike.

Each read is one grouped statement over an indexed column or a small table; the reads of runs that started or ended
look back a bounded window only."""

from __future__ import annotations

from dataclasses import dataclass

from storage.db import Database
from storage.runs import LIVE_SQL

_OF_AGENT = "FROM runs r JOIN sessions s ON s.key = r.session_key"

# the sub-agent lane's runs: a sub-agent session's own runs (a delegated child waits in no lane)
_IN_LANE = "s.kind = 'subagent' AND s.delegation IS NULL AND r.kind <> 'chat'"


@dataclass(frozen=True)
class LaneCounts:
    running: int
    queued: int


@dataclass(frozen=True)
class RunMark:
    """A run that started or ended: its id, agent, status and when."""

    run_id: str
    agent: str
    status: str
    at: float


class GaugeRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def runs_by_agent_and_status(self, ended_since: float) -> dict[tuple[str, str], int]:
        """Live runs and runs ended after ``ended_since``, by agent and status.

        Both are read through an index (by status, by end), never the whole table: the loop runs these reads."""
        rows = await self._db.fetch_all(
            f"SELECT s.agent_id, r.status, COUNT(*) {_OF_AGENT} WHERE r.status IN {LIVE_SQL} "
            "GROUP BY s.agent_id, r.status"
        )
        rows += await self._db.fetch_all(
            f"SELECT s.agent_id, r.status, COUNT(*) {_OF_AGENT} WHERE r.ended_at > ? GROUP BY s.agent_id, r.status",
            (ended_since,),
        )
        return {(agent, status): count for agent, status, count in rows}

    async def lane(self) -> LaneCounts:
        """Sub-agent runs running and queued, over every process."""
        rows = await self._db.fetch_all(
            f"SELECT r.status, COUNT(*) {_OF_AGENT} WHERE r.status IN ('running', 'queued') AND {_IN_LANE} "
            "GROUP BY r.status"
        )
        counts: dict[str, int] = {status: count for status, count in rows}
        return LaneCounts(running=counts.get("running", 0), queued=counts.get("queued", 0))

    async def approvals_waiting(self) -> int:
        row = await self._db.fetch_one("SELECT COUNT(*) FROM approvals WHERE status = 'pending'")
        return row[0] if row else 0

    async def heartbeats(self) -> dict[str, float]:
        """Each live process's last heartbeat, by executor id.

        A cleanly stopped process (heartbeat 0) or one being recovered (claimed) is left out."""
        rows = await self._db.fetch_all(
            "SELECT executor_id, heartbeat_at FROM processes WHERE claimed_by IS NULL AND heartbeat_at > 0"
        )
        return {executor: at for executor, at in rows}

    async def started_since(self, since: float) -> list[RunMark]:
        rows = await self._db.fetch_all(
            f"SELECT r.id, s.agent_id, r.status, r.started_at {_OF_AGENT} WHERE r.started_at > ?", (since,)
        )
        return [RunMark(*row) for row in rows]

    async def ended_since(self, since: float) -> list[RunMark]:
        rows = await self._db.fetch_all(
            f"SELECT r.id, s.agent_id, r.status, r.ended_at {_OF_AGENT} WHERE r.ended_at > ?", (since,)
        )
        return [RunMark(*row) for row in rows]
