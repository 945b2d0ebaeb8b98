"""Where each run's live status message is.

So it can still be finalised after a restart."""

from __future__ import annotations

from dataclasses import dataclass

from storage.db import Connection, Database


@dataclass(frozen=True)
class StatusMessage:
    run_id: str
    channel_id: int
    message_id: int
    final: bool


class StatusMessageRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, run_id: str) -> StatusMessage | None:
        row = await self._db.fetch_one(
            "SELECT run_id, channel_id, message_id, final FROM status_messages WHERE run_id = ?", (run_id,)
        )
        return StatusMessage(row[0], row[1], row[2], bool(row[3])) if row else None

    async def add(self, tx: Connection, run_id: str, channel_id: int, message_id: int) -> None:
        await tx.execute(
            "INSERT INTO status_messages (run_id, channel_id, message_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (run_id, channel_id, message_id),
        )

    async def mark_final(self, tx: Connection, run_id: str) -> None:
        await tx.execute("UPDATE status_messages SET final = 1 WHERE run_id = ?", (run_id,))

    async def unfinished(self) -> list[str]:
        rows = await self._db.fetch_all("SELECT run_id FROM status_messages WHERE final = 0")
        return [row[0] for row in rows]
