"""Outbox repository: durable rows for everything that must reach Discord, delivered at least once by the
worker and made exactly-once by the idempotency key (unique here, and sent to Discord as the message nonce)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import aiosqlite

from storage.db import Database

_COLUMNS = (
    "id, idempotency_key, run_id, channel_id, payload_json, status, parts_sent, message_ids_json, attempts, "
    "next_attempt_at, last_error, created_at, delivered_at"
)


@dataclass(frozen=True)
class OutboxRow:
    id: int
    idempotency_key: str
    run_id: str | None
    channel_id: int
    payload_json: str
    status: str
    parts_sent: int
    message_ids: list[int]
    attempts: int
    next_attempt_at: float
    last_error: str | None
    created_at: float
    delivered_at: float | None


def _from_row(row: aiosqlite.Row) -> OutboxRow:
    values = {name: row[name] for name in row.keys() if name != "message_ids_json"}
    return OutboxRow(**values, message_ids=json.loads(row["message_ids_json"]))


class OutboxRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def enqueue(
        self, tx: aiosqlite.Connection, *, key: str, run_id: str | None, channel_id: int, payload_json: str, now: float
    ) -> bool:
        """Add a row unless one with this key exists; returns whether a row was added."""
        cursor = await tx.execute(
            "INSERT OR IGNORE INTO outbox (idempotency_key, run_id, channel_id, payload_json, next_attempt_at, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (key, run_id, channel_id, payload_json, now, now),
        )
        return cursor.rowcount == 1

    async def due(self, now: float, limit: int = 20) -> list[OutboxRow]:
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM outbox WHERE status = 'pending' AND next_attempt_at <= ? "
            "ORDER BY next_attempt_at, id LIMIT ?",
            (now, limit),
        )
        return [_from_row(row) for row in rows]

    async def next_attempt_at(self) -> float | None:
        row = await self._db.fetch_one("SELECT MIN(next_attempt_at) FROM outbox WHERE status = 'pending'")
        return row[0] if row else None

    async def retry_pending_now(self, now: float) -> int:
        """Make every undelivered row due at once (a fresh process need not wait out an old backoff)."""
        async with self._db.transaction() as tx:
            cursor = await tx.execute(
                "UPDATE outbox SET next_attempt_at = ? WHERE status = 'pending' AND next_attempt_at > ?", (now, now)
            )
        return cursor.rowcount

    async def record_part(self, row_id: int, parts_sent: int, message_ids: list[int]) -> None:
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE outbox SET parts_sent = ?, message_ids_json = ? WHERE id = ?",
                (parts_sent, json.dumps(message_ids), row_id),
            )

    async def mark_delivered(self, row_id: int, now: float) -> None:
        async with self._db.transaction() as tx:
            await tx.execute("UPDATE outbox SET status = 'delivered', delivered_at = ? WHERE id = ?", (now, row_id))

    async def schedule_retry(self, row_id: int, attempts: int, next_attempt_at: float, error: str) -> None:
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ?",
                (attempts, next_attempt_at, error, row_id),
            )

    async def mark_failed(self, row_id: int, attempts: int, error: str) -> None:
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE outbox SET status = 'failed', attempts = ?, last_error = ? WHERE id = ?",
                (attempts, error, row_id),
            )

    async def for_run(self, run_id: str) -> list[OutboxRow]:
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM outbox WHERE run_id = ? ORDER BY id", (run_id,))
        return [_from_row(row) for row in rows]
