"""Sub-agent lane places that durable runs hold, and the line waiting for one.

Both hold across processes. A run holds a place while it runs: ``runs.lane_place`` names the process (executor id)
it holds it for. A lane run without one waits in line, ordered by ``runs.lane_priority`` (1 + how many lane runs its
member had queued or running before it), then age: one member's tenth spawn waits behind another member's first. The
place is given back by the statement that stops the run running (``RunRepository.finish``, ``set_status``). Every
claim first updates the lane's ``lane_claims`` row: its row lock takes claims one at a time across processes, so two
never see the last free place.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.db import Connection, Database

_LANE = "subagents"
_WAITING = "status IN ('queued', 'running') AND lane_priority IS NOT NULL AND lane_place IS NULL"
_LINE = f"SELECT id, status FROM runs WHERE {_WAITING} ORDER BY lane_priority, created_at"


@dataclass(frozen=True)
class LaneLimits:
    """``total``: places across every process; ``per_process``: in any one (``None``: no limit of its own)."""

    total: int
    per_process: int | None


class LanePlaceRepository:
    def __init__(self, db: Database, executor_id: str | None) -> None:
        self._db = db
        self._executor_id = executor_id

    async def join(self, tx: Connection, run_id: str, member_id: int | None, created_at: float) -> None:
        """Put a new lane run in line, behind its member's earlier lane runs.

        Those are the member's lane runs queued or running from before it."""
        member, params = ("IS NULL", ()) if member_id is None else ("= ?", (member_id,))
        await tx.execute(
            "UPDATE runs SET lane_priority = 1 + (SELECT COUNT(*) FROM runs AS earlier JOIN sessions "
            "ON sessions.key = earlier.session_key WHERE earlier.status IN ('queued', 'running') "
            "AND earlier.kind != 'chat' AND sessions.delegation IS NULL AND earlier.created_at < ? "
            f"AND earlier.requester_user_id {member}) WHERE id = ?",
            (created_at, *params, run_id),
        )

    async def claim(self, tx: Connection, run_id: str, limits: LaneLimits) -> bool:
        """A free place for a run in line, for this process.

        Only when no run waits before it in line."""
        room = await self._room(tx, limits)
        if room <= 0:
            return False
        first = await tx.fetch_one(f"{_LINE} LIMIT 1")
        if first is None or first[0] != run_id:
            return False
        await tx.execute("UPDATE runs SET lane_place = ? WHERE id = ?", (self._executor_id, run_id))
        return True

    async def hand_out(self, tx: Connection, limits: LaneLimits) -> list[tuple[str, bool]]:
        """Give this process the free places, to the runs first in line; each run given one, and whether it was
        woken (running: its next wake starts) rather than queued."""
        room = await self._room(tx, limits)
        if room <= 0:
            return []
        first = await tx.fetch_all(f"{_LINE} LIMIT ?", (room,))
        await tx.executemany(
            "UPDATE runs SET lane_place = ? WHERE id = ?", [(self._executor_id, row[0]) for row in first]
        )
        return [(row[0], row[1] == "running") for row in first]

    async def _room(self, tx: Connection, limits: LaneLimits) -> int:
        """Places free for this process now; takes the claims' lock first."""
        await tx.execute("UPDATE lane_claims SET claims = claims + 1 WHERE lane = ?", (_LANE,))
        held = await tx.fetch_one(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN lane_place = ? THEN 1 ELSE 0 END), 0) FROM runs "
            "WHERE lane_place IS NOT NULL",
            (self._executor_id,),
        )
        total, here = (int(held[0]), int(held[1])) if held is not None else (0, 0)
        room = limits.total - total
        return room if limits.per_process is None else min(room, limits.per_process - here)

    async def anyone_waiting(self) -> bool:
        return await self._db.fetch_one(f"SELECT 1 FROM runs WHERE {_WAITING} LIMIT 1") is not None

    async def line(self) -> list[str]:
        """The runs waiting for a place, first in line first."""
        return [row[0] for row in await self._db.fetch_all(_LINE)]

    async def take_over(self, tx: Connection, executor_id: str) -> int:
        """This process takes over the places a dead process held; how many.

        Its runs resume here or in any process."""
        return await tx.execute("UPDATE runs SET lane_place = ? WHERE lane_place = ?", (self._executor_id, executor_id))
