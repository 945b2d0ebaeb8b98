"""Per-server settings repository (``NULL`` columns inherit from the config file)."""

from __future__ import annotations

from typing import Any

from storage.db import Connection, Database

FIELDS = (
    "enabled",
    "idle_hours",
    "max_age_hours",
    "spawn_subagent_sessions",
    "auto_archive_minutes",
    "moderator_role_id",
    "streaming",
)
_BOOLEANS = ("enabled", "spawn_subagent_sessions", "streaming")


class GuildSettingsRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, guild_id: int) -> dict[str, Any]:
        """The values this server set, by field (fields it never set are absent)."""
        row = await self._db.fetch_one(
            f"SELECT {', '.join(FIELDS)} FROM guild_settings WHERE guild_id = ?", (guild_id,)
        )
        if row is None:
            return {}
        values = {name: row[name] for name in FIELDS if row[name] is not None}
        return {k: bool(v) if k in _BOOLEANS else v for k, v in values.items()}

    async def update(self, tx: Connection, guild_id: int, changes: dict[str, Any], *, by: int, now: float) -> None:
        columns = ", ".join(changes)
        placeholders = ", ".join("?" for _ in changes)
        updates = ", ".join(f"{name} = excluded.{name}" for name in changes)
        await tx.execute(
            f"INSERT INTO guild_settings (guild_id, {columns}, updated_by, updated_at) "
            f"VALUES (?, {placeholders}, ?, ?) ON CONFLICT(guild_id) DO UPDATE SET {updates}, "
            "updated_by = excluded.updated_by, updated_at = excluded.updated_at",
            (guild_id, *(int(v) if isinstance(v, bool) else v for v in changes.values()), by, now),
        )
