"""Sessions repository."""

from __future__ import annotations

from collections.abc import AsyncIterator

from bot.records import (
    Cleanup,
    ControlScope,
    Delegation,
    Session,
    SessionKind,
    SessionMode,
    SessionRole,
    SpawnSite,
)
from storage.db import Connection, Database, Row
from storage.due_rows import due_rows

_COLUMNS = (
    "key, agent_id, kind, depth, role, requester_session_key, label, guild_id, channel_id, owner_user_id, created_at, "
    "control_scope, task, mode, cleanup, sandboxed, archive_at, archived_at, model, delegation, spawn_site, "
    "charged_to, acp_agent"
)

_NOT_ARCHIVED = "archived_at IS NULL"  # with a deadline compared, the partial index sessions_to_archive


def _stored(value: object) -> object:
    """A session's field as its column holds it: flags as 0/1."""
    return int(value) if isinstance(value, bool) else value


def _from_row(row: Row) -> Session:
    values = dict(zip(row.keys(), row, strict=True))
    return Session(
        **{
            **values,
            "kind": SessionKind(values["kind"]),
            "role": SessionRole(values["role"]),
            "control_scope": ControlScope(values["control_scope"]),
            "mode": SessionMode(values["mode"]),
            "cleanup": Cleanup(values["cleanup"]),
            "sandboxed": bool(values["sandboxed"]),
            "delegation": Delegation(values["delegation"]) if values["delegation"] else None,
            "spawn_site": SpawnSite(values["spawn_site"]) if values["spawn_site"] else None,
        }
    )


class SessionRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, tx: Connection, session: Session, *, if_missing: bool = False) -> None:
        columns = _COLUMNS.split(", ")
        await tx.execute(
            f"INSERT INTO sessions ({_COLUMNS}) VALUES ({', '.join('?' * len(columns))})"
            + (" ON CONFLICT DO NOTHING" if if_missing else ""),
            tuple(_stored(getattr(session, column)) for column in columns),
        )

    async def get(self, key: str) -> Session | None:
        row = await self._db.fetch_one(f"SELECT {_COLUMNS} FROM sessions WHERE key = ?", (key,))
        return _from_row(row) if row else None

    async def set_archive_at(self, tx: Connection, key: str, archive_at: float | None) -> None:
        await tx.execute("UPDATE sessions SET archive_at = ? WHERE key = ? AND archived_at IS NULL", (archive_at, key))

    async def set_model(self, tx: Connection, key: str, model: str | None) -> None:
        await tx.execute("UPDATE sessions SET model = ? WHERE key = ?", (model, key))

    async def charged_since(self, budget_key: str, since: float) -> int:
        """How many launches were charged to the action budget ``budget_key`` since ``since``."""
        row = await self._db.fetch_one(
            "SELECT COUNT(*) FROM sessions WHERE charged_to = ? AND created_at >= ?", (budget_key, since)
        )
        assert row is not None
        return int(row[0])

    async def archived_at(self, tx: Connection, key: str) -> float | None:
        row = await tx.fetch_one("SELECT archived_at FROM sessions WHERE key = ?", (key,))
        return row[0] if row else None

    async def archive(self, tx: Connection, key: str, now: float) -> bool:
        changed = await tx.execute(
            "UPDATE sessions SET archived_at = ?, archive_at = NULL WHERE key = ? AND archived_at IS NULL",
            (now, key),
        )
        return changed == 1

    async def next_archive_at(self) -> float | None:
        """The earliest archive deadline of a session not yet archived."""
        row = await self._db.fetch_one(
            "SELECT MIN(archive_at) FROM sessions WHERE archive_at IS NOT NULL AND archived_at IS NULL"
        )
        return None if row is None or row[0] is None else float(row[0])

    async def due_for_archive(self, now: float) -> AsyncIterator[str]:
        """The keys of the sessions whose archive deadline is ``now`` or before, earliest first."""
        async for row in due_rows(self._db, "sessions", "key", "archive_at", "key", now, where=_NOT_ARCHIVED):
            yield row[0]

    async def clear_archive_at(self, tx: Connection, key: str, *, due_by: float) -> None:
        """Drop a deadline that came while its session could not be archived.

        A run or a thread took it: the session gets a new one when that ends. A later deadline, written meanwhile,
        stays."""
        await tx.execute("UPDATE sessions SET archive_at = NULL WHERE key = ? AND archive_at <= ?", (key, due_by))

    async def children(self, requester_key: str) -> list[Session]:
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM sessions WHERE requester_session_key = ? ORDER BY created_at", (requester_key,)
        )
        return [_from_row(row) for row in rows]
