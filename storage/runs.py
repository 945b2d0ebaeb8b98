"""Runs repository: creation, state transitions, and the start-up sweep of runs a crash left behind."""

from __future__ import annotations

from decimal import Decimal

import aiosqlite

from bot.core.models import Run, RunKind, RunStatus, Usage
from storage.db import Database

_COLUMNS = (
    "id, session_key, kind, status, task, model, thinking, timeout_seconds, requester_user_id, guild_id, "
    "channel_id, source_message_id, created_at, started_at, ended_at, error, result_text, "
    "input_tokens, output_tokens, requests, tool_calls, cost"
)


def _from_row(row: aiosqlite.Row) -> Run:
    return Run(
        id=row["id"], session_key=row["session_key"], kind=RunKind(row["kind"]), status=RunStatus(row["status"]),
        task=row["task"], model=row["model"], thinking=row["thinking"], timeout_seconds=row["timeout_seconds"],
        requester_user_id=row["requester_user_id"], guild_id=row["guild_id"], channel_id=row["channel_id"],
        source_message_id=row["source_message_id"], created_at=row["created_at"], started_at=row["started_at"],
        ended_at=row["ended_at"], error=row["error"], result_text=row["result_text"],
        usage=Usage(
            input_tokens=row["input_tokens"], output_tokens=row["output_tokens"], requests=row["requests"],
            tool_calls=row["tool_calls"], cost=Decimal(row["cost"]) if row["cost"] is not None else None,
        ),
    )


class RunRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, tx: aiosqlite.Connection, run: Run) -> None:
        await tx.execute(
            "INSERT INTO runs (id, session_key, kind, status, task, model, thinking, timeout_seconds, "
            "requester_user_id, guild_id, channel_id, source_message_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run.id, run.session_key, run.kind.value, run.status.value, run.task, run.model, run.thinking,
                run.timeout_seconds, run.requester_user_id, run.guild_id, run.channel_id, run.source_message_id,
                run.created_at,
            ),
        )

    async def get(self, run_id: str) -> Run | None:
        row = await self._db.fetch_one(f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        return _from_row(row) if row else None

    async def mark_running(self, run_id: str, started_at: float) -> None:
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE runs SET status = 'running', started_at = ? WHERE id = ? AND status = 'queued'",
                (started_at, run_id),
            )

    async def finish(
        self,
        tx: aiosqlite.Connection,
        run_id: str,
        status: RunStatus,
        ended_at: float,
        *,
        result_text: str | None = None,
        error: str | None = None,
        usage: Usage = Usage(),
    ) -> bool:
        """Move a live run to a terminal state; False if it was already terminal (so nothing is announced twice)."""
        cursor = await tx.execute(
            "UPDATE runs SET status = ?, ended_at = ?, result_text = ?, error = ?, input_tokens = ?, "
            "output_tokens = ?, requests = ?, tool_calls = ?, cost = ? "
            "WHERE id = ? AND status IN ('queued', 'running')",
            (
                status.value, ended_at, result_text, error, usage.input_tokens, usage.output_tokens,
                usage.requests, usage.tool_calls, str(usage.cost) if usage.cost is not None else None, run_id,
            ),
        )
        return cursor.rowcount == 1

    async def list_live(self) -> list[Run]:
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM runs WHERE status IN ('queued', 'running') ORDER BY created_at"
        )
        return [_from_row(row) for row in rows]
