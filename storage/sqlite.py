"""The SQLite backend: WAL, foreign keys, a writer connection for transactions and a read-only one for reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from storage.db import Connection, Database, DatabaseUnreachable, Params, Row


class SqliteConnection:
    def __init__(self, connection: aiosqlite.Connection) -> None:
        self.raw = connection

    async def execute(self, sql: str, params: Params = ()) -> int:
        cursor = await self.raw.execute(sql, params)
        return cursor.rowcount

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        await self.raw.executemany(sql, rows)

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        return list(await self.raw.execute_fetchall(sql, params))

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        return await (await self.raw.execute(sql, params)).fetchone()


_WAL_ATTEMPTS = 50  # 5 s, as busy_timeout


async def _connect(path: str) -> SqliteConnection:
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        connection = await aiosqlite.connect(path, isolation_level=None)
    except (OSError, aiosqlite.Error) as error:
        raise DatabaseUnreachable(f"SQLite database {path}: {error}") from error
    connection.row_factory = aiosqlite.Row
    for pragma in ("foreign_keys = ON", "synchronous = NORMAL", "busy_timeout = 5000"):
        await connection.execute_fetchall(f"PRAGMA {pragma}")
    return SqliteConnection(connection)


async def _wal(connection: SqliteConnection) -> None:
    """Switch the file to WAL. The switch takes the file for a moment and ``busy_timeout`` does not cover it, so a
    process opening a new file at the same instant as another (which may be migrating it) waits its turn."""
    for attempt in range(_WAL_ATTEMPTS):
        try:
            await connection.fetch_all("PRAGMA journal_mode = WAL")
            return
        except aiosqlite.OperationalError as error:
            if "locked" not in str(error) or attempt == _WAL_ATTEMPTS - 1:
                raise
            await asyncio.sleep(0.1)


class SqliteDatabase(Database):
    """Plain reads go to the reader connection, so they only ever see committed state: never half of another
    task's transaction."""

    migrations_folder = "migrations/sqlite"

    def __init__(self, writer: SqliteConnection, reader: SqliteConnection) -> None:
        super().__init__()
        self._conn = writer
        self._reader = reader

    @classmethod
    async def connect(cls, path: str) -> SqliteDatabase:
        writer = await _connect(path)
        await _wal(writer)
        reader = await _connect(path)
        await reader.fetch_all("PRAGMA query_only = ON")
        return cls(writer, reader)

    @asynccontextmanager
    async def _writer(self) -> AsyncIterator[Connection]:
        yield self._conn

    async def _begin(self, connection: Connection) -> None:
        await connection.execute("BEGIN IMMEDIATE")

    async def _lock_migrations(self, connection: Connection) -> None:
        """Nothing to add: ``BEGIN IMMEDIATE`` already holds every other writer off until the transaction ends."""

    async def _rollback(self, connection: Connection) -> None:
        if self._conn.raw.in_transaction:
            await connection.execute("ROLLBACK")

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        return await self._reader.fetch_all(sql, params)

    async def close(self) -> None:
        await self._reader.raw.close()
        await self._conn.raw.close()
