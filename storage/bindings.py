"""Thread bindings repository."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from bot.records import Binding
from storage.db import Connection, Database, Row
from storage.due_rows import due_rows

_COLUMNS = (
    "thread_id, parent_channel_id, guild_id, session_key, bound_by, bound_at, last_activity_at, idle_seconds, "
    "max_age_seconds, ends_with_run_id"
)
_WRITTEN = f"{_COLUMNS}, deadline_at"
_REPLACE = ", ".join(f"{name} = excluded.{name}" for name in _WRITTEN.split(", ")[1:])
_SCAN_PAGE = 5000  # bindings read at a time when every one is looked at
NOTICES = "thread_bindings"  # notices of bindings made ("<thread id> <session key>") and ended ("<thread id>")


def _deadline_at(binding: Binding) -> float | None:
    deadline = binding.deadline()
    return deadline[0] if deadline else None


class BindingRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, tx: Connection, binding: Binding) -> None:
        await tx.execute(
            f"INSERT INTO thread_bindings ({_WRITTEN}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
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
                _deadline_at(binding),
            ),
        )
        await self._db.notify(tx, NOTICES, f"{binding.thread_id} {binding.session_key}")

    async def get(self, thread_id: int) -> Binding | None:
        row = await self._db.fetch_one(f"SELECT {_COLUMNS} FROM thread_bindings WHERE thread_id = ?", (thread_id,))
        return Binding(*row) if row else None

    async def for_session(self, session_key: str) -> list[Binding]:
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM thread_bindings WHERE session_key = ?", (session_key,))
        return [Binding(*row) for row in rows]

    async def ending_with(self, run_id: str) -> list[Binding]:
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM thread_bindings WHERE ends_with_run_id = ?", (run_id,))
        return [Binding(*row) for row in rows]

    async def threads_by_guild(self) -> AsyncIterator[tuple[int, int]]:
        """(guild id, thread id) of every binding in a server (a DM's has none)."""
        async for thread_id, guild_id in self._scan("guild_id", "guild_id IS NOT NULL"):
            yield guild_id, thread_id

    async def sessions_by_thread(self) -> AsyncIterator[tuple[int, str]]:
        """(thread id, session key) of every binding."""
        async for thread_id, session_key in self._scan("session_key"):
            yield thread_id, session_key

    async def _scan(self, column: str, where: str = "TRUE") -> AsyncIterator[Row]:
        """(thread id, ``column``) of every binding ``where`` holds, read a page at a time.

        So a hundred thousand bindings are never one result in memory, and the event loop runs between pages (a
        SQLite read does not suspend)."""
        after = -1
        while True:
            rows = await self._db.fetch_all(
                f"SELECT thread_id, {column} FROM thread_bindings WHERE {where} AND thread_id > ? "
                "ORDER BY thread_id LIMIT ?",
                (after, _SCAN_PAGE),
            )
            for row in rows:
                yield row
            if len(rows) < _SCAN_PAGE:
                return
            after = rows[-1][0]
            await asyncio.sleep(0)

    async def run_mode(self) -> list[Binding]:
        """The bindings that end with their run."""
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM thread_bindings WHERE ends_with_run_id IS NOT NULL")
        return [Binding(*row) for row in rows]

    async def touch(self, tx: Connection, touched: Binding) -> None:
        """Record activity: ``touched`` is the binding with its new ``last_activity_at`` (and so its new deadline)."""
        await tx.execute(
            "UPDATE thread_bindings SET last_activity_at = ?, deadline_at = ? WHERE thread_id = ?",
            (touched.last_activity_at, _deadline_at(touched), touched.thread_id),
        )

    async def set_deadline(self, tx: Connection, thread_id: int, deadline_at: float | None) -> None:
        """Correct a stored deadline that says less than the binding's own lifetimes (``None``: it has none)."""
        await tx.execute("UPDATE thread_bindings SET deadline_at = ? WHERE thread_id = ?", (deadline_at, thread_id))

    async def next_deadline(self) -> float | None:
        row = await self._db.fetch_one("SELECT MIN(deadline_at) FROM thread_bindings")
        return None if row is None or row[0] is None else float(row[0])

    async def due(self, now: float) -> AsyncIterator[Binding]:
        """The bindings whose stored deadline is ``now`` or before, earliest first."""
        async for row in due_rows(self._db, "thread_bindings", _COLUMNS, "deadline_at", "thread_id", now):
            yield Binding(*row[:-2])

    async def remove(
        self, tx: Connection, thread_id: int, *, unless_changed_from: Binding | None = None
    ) -> Binding | None:
        """Delete the binding of ``thread_id``; returns it, or ``None`` if there was none (or it changed).

        With ``unless_changed_from``, only while it is still that binding with no activity since (a deadline seen
        due still is: compare-and-set, so of several processes whose timers fire, one ends it)."""
        where = "thread_id = ?"
        params: tuple[int | float, ...] = (thread_id,)
        if unless_changed_from is not None:
            where += " AND bound_at = ? AND last_activity_at = ?"
            params += (unless_changed_from.bound_at, unless_changed_from.last_activity_at)
        row = await tx.fetch_one(f"DELETE FROM thread_bindings WHERE {where} RETURNING {_COLUMNS}", params)
        if row is None:
            return None
        await self._db.notify(tx, NOTICES, str(thread_id))
        return Binding(*row)
