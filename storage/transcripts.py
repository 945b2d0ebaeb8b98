"""Transcript repository: pydantic-ai messages, stored one JSON object per row as the run produces them."""

from __future__ import annotations

import time
from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from storage.db import Connection, Database, Row


def _load(rows: Sequence[Row]) -> list[ModelMessage]:
    return _parsed([row[0] for row in rows])


def _parsed(texts: Sequence[str]) -> list[ModelMessage]:
    if not texts:
        return []
    return ModelMessagesTypeAdapter.validate_json("[" + ",".join(texts) + "]")


def _dump(message: ModelMessage) -> str:
    return ModelMessagesTypeAdapter.dump_json([message]).decode()[1:-1]


class TranscriptRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def append(
        self, tx: Connection, session_key: str, run_id: str | None, messages: Sequence[ModelMessage]
    ) -> None:
        """Add messages to a session's history; ``run_id`` is ``None`` for context that no run of it produced."""
        now = time.time()
        await tx.executemany(
            "INSERT INTO transcript_messages (session_key, run_id, message_json, created_at) VALUES (?, ?, ?, ?)",
            [(session_key, run_id, _dump(message), now) for message in messages],
        )

    async def history(self, session_key: str, first: int | None = None) -> list[ModelMessage]:
        """The session's messages in order; with ``first``, only that many (the history a turn started with)."""
        limit = "" if first is None else f" LIMIT {int(first)}"
        rows = await self._db.fetch_all(
            f"SELECT message_json FROM transcript_messages WHERE session_key = ? ORDER BY id{limit}", (session_key,)
        )
        return _load(rows)

    async def last(self, session_key: str, limit: int, before: int | None = None) -> list[tuple[int, ModelMessage]]:
        """The session's last ``limit`` messages, with their row ids, in order; with ``before``, the last ones
        stored before that row. Only those rows are read."""
        after = "" if before is None else " AND id < ?"
        rows = await self._db.fetch_all(
            f"SELECT id, message_json FROM transcript_messages WHERE session_key = ?{after} ORDER BY id DESC LIMIT ?",
            (session_key, limit) if before is None else (session_key, before, limit),
        )
        rows = rows[::-1]
        return list(zip([row[0] for row in rows], _parsed([row[1] for row in rows]), strict=True))

    async def for_run(self, run_id: str) -> list[ModelMessage]:
        rows = await self._db.fetch_all(
            "SELECT message_json FROM transcript_messages WHERE run_id = ? ORDER BY id", (run_id,)
        )
        return _load(rows)

    async def count_for_run(self, run_id: str) -> int:
        row = await self._db.fetch_one("SELECT COUNT(*) FROM transcript_messages WHERE run_id = ?", (run_id,))
        return row[0] if row else 0

    async def count(self, session_key: str) -> int:
        row = await self._db.fetch_one("SELECT COUNT(*) FROM transcript_messages WHERE session_key = ?", (session_key,))
        return row[0] if row else 0
