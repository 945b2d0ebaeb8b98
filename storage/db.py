"""The SQLite connection: WAL, foreign keys, numbered ``.sql`` migrations, serialised write transactions."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import aiosqlite

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def _migrations() -> list[tuple[int, str, str]]:
    folder = resources.files("storage") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


async def _connect(path: str) -> aiosqlite.Connection:
    connection = await aiosqlite.connect(path, isolation_level=None)
    connection.row_factory = aiosqlite.Row
    for pragma in ("foreign_keys = ON", "synchronous = NORMAL", "busy_timeout = 5000"):
        await connection.execute_fetchall(f"PRAGMA {pragma}")
    return connection


class Database:
    """A writer connection for transactions and a reader connection for everything else.

    Transactions are serialised by a lock (two tasks' statements must not interleave on the writer). Plain
    reads go to the reader, so they only ever see committed state: never half of another task's transaction.
    """

    def __init__(self, writer: aiosqlite.Connection, reader: aiosqlite.Connection) -> None:
        self._conn = writer
        self._reader = reader
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str) -> Database:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        writer = await _connect(path)
        await writer.execute_fetchall("PRAGMA journal_mode = WAL")
        reader = await _connect(path)
        await reader.execute_fetchall("PRAGMA query_only = ON")
        database = cls(writer, reader)
        await database._migrate()
        return database

    async def _migrate(self) -> None:
        await self._conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT)"
        )
        applied = {row[0] for row in await self._conn.execute_fetchall("SELECT version FROM schema_migrations")}
        for version, name, sql in _migrations():
            if version in applied:
                continue
            async with self.transaction() as tx:
                for statement in _split_statements(sql):
                    await tx.execute(statement)
                await tx.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", (version, name))

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """Yield the connection inside ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on any exception, a
        cancellation included)."""
        async with self._write_lock:
            try:
                await _complete(self._conn.execute("BEGIN IMMEDIATE"))
                yield self._conn
            except BaseException:
                if self._conn.in_transaction:
                    await _complete(self._conn.execute("ROLLBACK"))
                raise
            await _complete(self._conn.execute("COMMIT"))

    async def fetch_all(self, sql: str, params: Iterable[Any] | Mapping[str, Any] = ()) -> list[aiosqlite.Row]:
        """Committed state only (see the class docstring); inside a transaction, read through its connection.
        ``params`` by position, or by name (``:day``) from a mapping."""
        bound = params if isinstance(params, Mapping) else tuple(params)
        return list(await self._reader.execute_fetchall(sql, bound))

    async def fetch_one(self, sql: str, params: Iterable[Any] | Mapping[str, Any] = ()) -> aiosqlite.Row | None:
        rows = await self.fetch_all(sql, params)
        return rows[0] if rows else None

    async def close(self) -> None:
        await self._reader.close()
        await self._conn.close()


async def _complete(statement: Awaitable[object]) -> None:
    """Run a statement to its end even when the task awaiting it is cancelled meanwhile (a kill cancels the run's
    task wherever it is), then let the cancellation through: a BEGIN, COMMIT or ROLLBACK abandoned half-way would
    leave the shared connection inside a transaction that every later one trips over."""
    running = asyncio.ensure_future(statement)
    try:
        await asyncio.shield(running)
    except asyncio.CancelledError:
        await running
        raise


def _split_statements(sql: str) -> list[str]:
    """Split a migration into statements; migrations hold no semicolons inside literals or triggers."""
    body = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
    return [statement.strip() for statement in body.split(";") if statement.strip()]
