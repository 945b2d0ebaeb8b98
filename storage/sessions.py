"""Sessions repository."""

from __future__ import annotations

import aiosqlite

from bot.core.models import Session
from storage.db import Database

_COLUMNS = (
    "key, agent_id, kind, depth, role, requester_session_key, label, guild_id, channel_id, owner_user_id, created_at"
)


def _from_row(row: aiosqlite.Row) -> Session:
    return Session(**{name: row[name] for name in row.keys()})


class SessionRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, tx: aiosqlite.Connection, session: Session, *, if_missing: bool = False) -> None:
        verb = "INSERT OR IGNORE" if if_missing else "INSERT"
        await tx.execute(
            f"{verb} INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session.key, session.agent_id, session.kind, session.depth, session.role,
                session.requester_session_key, session.label, session.guild_id, session.channel_id,
                session.owner_user_id, session.created_at,
            ),
        )

    async def get(self, key: str) -> Session | None:
        row = await self._db.fetch_one(f"SELECT {_COLUMNS} FROM sessions WHERE key = ?", (key,))
        return _from_row(row) if row else None
