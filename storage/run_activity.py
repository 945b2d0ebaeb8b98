"""Run activity repository: what a live run is doing now, in a line, for its status message and ``info``.

An ACP agent's run reports its tool calls and plan here as they stream in; the row goes when its turn ends."""

from __future__ import annotations

from storage.db import Connection, Database

MAX_ACTIVITY_CHARS = 300


class RunActivityRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, run_id: str) -> str | None:
        row = await self._db.fetch_one("SELECT activity FROM run_activity WHERE run_id = ?", (run_id,))
        return row[0] if row else None

    async def set(self, tx: Connection, run_id: str, activity: str, now: float) -> None:
        """Replace the run's activity (cut to :data:`MAX_ACTIVITY_CHARS`)."""
        await tx.execute(
            "INSERT INTO run_activity (run_id, activity, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(run_id) DO UPDATE SET activity = excluded.activity, updated_at = excluded.updated_at",
            (run_id, activity[:MAX_ACTIVITY_CHARS], now),
        )

    async def clear(self, tx: Connection, run_id: str) -> None:
        await tx.execute("DELETE FROM run_activity WHERE run_id = ?", (run_id,))
