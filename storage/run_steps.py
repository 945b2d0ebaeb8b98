"""Run steps repository: what each step of a durable run journaled in the store returned (``bot/core/store_steps``)."""

from __future__ import annotations

from storage.db import Connection, Database


class RunStepRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def output(self, step_key: str) -> str | None:
        """What the step returned, if it happened."""
        row = await self._db.fetch_one("SELECT output FROM run_steps WHERE step_key = ?", (step_key,))
        return row[0] if row is not None else None

    async def record(self, tx: Connection, step_key: str, run_id: str, output: str) -> None:
        sql = "INSERT INTO run_steps (step_key, run_id, output) VALUES (?, ?, ?)"
        await tx.execute(sql, (step_key, run_id, output))
