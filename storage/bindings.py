"""Thread bindings repository."""

from __future__ import annotations

from bot.records import Binding
from storage.db import Connection, Database

_COLUMNS = (
    "thread_id, parent_channel_id, guild_id, session_key, bound_by, bound_at, last_activity_at, idle_seconds, "
    "max_age_seconds, ends_with_run_id"
)
_REPLACE = ", ".join(f"{name} = excluded.{name}" for name in _COLUMNS.split(", ")[1:])


class BindingRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, tx: Connection, binding: Binding) -> None:
        await tx.execute(
            f"INSERT INTO thread_bindings ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            f"ON CONFLICT (thread_id) DO UPDATE SET {_REPLACE}",
            (
                binding.thread_id,
                binding.parent_channel_id,
                binding.guild_id,
                binding.session_key,
                binding.bound_by,
                binding.bound_at,
                binding.last_activity_at,
                binding.idle_seconds,
                binding.max_age_seconds,
                binding.ends_with_run_id,
            ),
        )

    async def get(self, thread_id: int) -> Binding | None:
        row = await self._db.fetch_one(f"SELECT {_COLUMNS} FROM thread_bindings WHERE thread_id = ?", (thread_id,))
        return Binding(*row) if row else None

    async def for_session(self, session_key: str) -> list[Binding]:
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM thread_bindings WHERE session_key = ?", (session_key,))
        return [Binding(*row) for row in rows]

    async def ending_with(self, run_id: str) -> list[Binding]:
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM thread_bindings WHERE ends_with_run_id = ?", (run_id,))
        return [Binding(*row) for row in rows]

    async def all(self) -> list[Binding]:
        return [Binding(*row) for row in await self._db.fetch_all(f"SELECT {_COLUMNS} FROM thread_bindings")]

    async def touch(self, tx: Connection, thread_id: int, now: float) -> None:
        await tx.execute("UPDATE thread_bindings SET last_activity_at = ? WHERE thread_id = ?", (now, thread_id))

    async def remove(
        self, tx: Connection, thread_id: int, *, unless_changed_from: Binding | None = None
    ) -> Binding | None:
        """Delete the binding of ``thread_id`` — with ``unless_changed_from``, only while it is still that binding
        with no activity since (a deadline seen due still is: compare-and-set, so of several processes whose timers
        fire, one ends it); returns it, or ``None`` if there was none (or it changed)."""
        where = "thread_id = ?"
        params: tuple[int | float, ...] = (thread_id,)
        if unless_changed_from is not None:
            where += " AND bound_at = ? AND last_activity_at = ?"
            params += (unless_changed_from.bound_at, unless_changed_from.last_activity_at)
        row = await tx.fetch_one(f"DELETE FROM thread_bindings WHERE {where} RETURNING {_COLUMNS}", params)
        return Binding(*row) if row else None
