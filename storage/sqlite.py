"""The SQLite backend: WAL, foreign keys, a writer connection for transactions and a read-only one for reads.

Statements run on the event loop's thread, not through a worker thread: a statement of this store takes tens of
microseconds, a hop to a thread and back several times that, and a transaction made of hops held the write lock across
all of them. With WAL and ``synchronous = NORMAL`` a commit does not wait for the disk; a checkpoint, which writes the
WAL's pages back into the database file and syncs it, would, so checkpoints run in a thread of their own
(``storage/checkpoints.py``), not inside the commit that passes SQLite's threshold. What could block the loop is
another process's lock: ``busy_timeout`` is 0 and a busy database is tried again after an asynchronous sleep
(:func:`_patiently`), for up to 5 s as ``busy_timeout = 5000`` did. Once ``BEGIN IMMEDIATE`` holds the write lock,
and for reads (WAL readers do not wait for writers), nothing waits.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from storage.checkpoints import Checkpointer
from storage.db import Connection, Database, DatabaseUnreachable, Params, Row

T = TypeVar("T")
_BUSY_SECONDS = 5.0  # how long a statement waits for another process's lock, as busy_timeout = 5000 did
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)  # primary codes; errors carry extended ones (BUSY_RECOVERY…)


async def _patiently(call: Callable[[], T]) -> T:
    """``call()`` now; while another connection holds the database, again after short asynchronous sleeps (1 ms,
    doubling to 50 ms), for up to 5 s."""
    delay, deadline = 0.001, time.monotonic() + _BUSY_SECONDS
    while True:
        try:
            return call()
        except sqlite3.OperationalError as error:
            if (error.sqlite_errorcode & 0xFF) not in _BUSY_CODES or time.monotonic() >= deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


class SqliteConnection:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self.raw = connection

    async def execute(self, sql: str, params: Params = ()) -> int:
        return (await _patiently(lambda: self.raw.execute(sql, params))).rowcount

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        listed = list(rows)
        await _patiently(lambda: self.raw.executemany(sql, listed))

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        return await _patiently(lambda: self.raw.execute(sql, params).fetchall())

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        return await _patiently(lambda: self.raw.execute(sql, params).fetchone())


def _connect(path: str) -> SqliteConnection:
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as error:
        raise DatabaseUnreachable(f"SQLite database {path}: {error}") from error
    connection.row_factory = sqlite3.Row
    for pragma in ("foreign_keys = ON", "synchronous = NORMAL", "busy_timeout = 0"):
        connection.execute(f"PRAGMA {pragma}")
    return SqliteConnection(connection)


class SqliteDatabase(Database):
    """Plain reads go to the reader connection, so they only ever see committed state: never half of another
    task's transaction."""

    migrations_folder = "migrations/sqlite"

    async def notify(self, tx: Connection, channel: str, payload: str) -> None:
        """Nobody listens (SQLite has no notices): processes sharing a SQLite store read its tables."""

    def __init__(self, writer: SqliteConnection, reader: SqliteConnection, checkpointed: str | None) -> None:
        super().__init__()
        self._conn = writer
        self._reader = reader
        self._checkpointer = Checkpointer(checkpointed, self._write_lock) if checkpointed is not None else None

    @classmethod
    async def connect(cls, path: str, *, checkpointer: bool = True) -> SqliteDatabase:
        """The store at ``path``, checkpointed by a :class:`Checkpointer`; else by SQLite in the commits (a bench's
        comparison).

        The switch to WAL takes the file for a moment: a process opening it at the same instant as another (which
        may be migrating it) waits its turn, like any statement."""
        writer = _connect(path)
        await writer.fetch_all("PRAGMA journal_mode = WAL")
        reader = _connect(path)
        await reader.fetch_all("PRAGMA query_only = ON")
        if not checkpointer:
            return cls(writer, reader, None)
        await writer.fetch_all("PRAGMA wal_autocheckpoint = 0")
        return cls(writer, reader, path)

    @property
    def checkpoints(self) -> int:
        """How many checkpoints the store's checkpointer has run (0 once closed)."""
        return self._checkpointer.checkpoints if self._checkpointer is not None else 0

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
        """Close the connections, the checkpointer's last: closing, it checkpoints what is left, in its thread."""
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            await checkpointer.stop()
        self._reader.raw.close()
        self._conn.raw.close()
        if checkpointer is not None:
            await checkpointer.close()
