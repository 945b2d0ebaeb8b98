"""A server's own budget caps (``/settings budgets``), by key; keys it never set inherit ``[budgets]``."""

from __future__ import annotations

from decimal import Decimal

from storage.db import Connection, Database


class GuildBudgetRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, guild_id: int) -> dict[str, Decimal]:
        rows = await self._db.fetch_all("SELECT key, value FROM guild_budgets WHERE guild_id = ?", (guild_id,))
        return {row["key"]: Decimal(row["value"]) for row in rows}

    async def set(self, tx: Connection, guild_id: int, values: dict[str, Decimal], *, by: int, now: float) -> None:
        await tx.executemany(
            "INSERT INTO guild_budgets (guild_id, key, value, updated_by, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(guild_id, key) DO UPDATE SET value = excluded.value, updated_by = excluded.updated_by, "
            "updated_at = excluded.updated_at",
            [(guild_id, key, str(value), by, now) for key, value in values.items()],
        )

    async def clear(self, tx: Connection, guild_id: int, key: str) -> None:
        await tx.execute("DELETE FROM guild_budgets WHERE guild_id = ? AND key = ?", (guild_id, key))
