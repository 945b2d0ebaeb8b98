"""Installation facts kept as key/value rows (e.g. the hash of the command schema last synced)."""

from __future__ import annotations

from storage.db import Connection, Database


class MetaRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, key: str) -> str | None:
        row = await self._db.fetch_one("SELECT value FROM meta WHERE key = ?", (key,))
        return row[0] if row else None

    async def set(self, tx: Connection, key: str, value: str) -> None:
        await tx.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
