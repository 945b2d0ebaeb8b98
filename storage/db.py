"""The database every repository talks to: SQLite (the embedded default) or PostgreSQL, chosen by ``[storage] url``.

Repositories write their SQL once, with ``?`` (or ``:name``) placeholders, in the part of SQL both dialects share
(``ON CONFLICT``, ``RETURNING``, ``WITH RECURSIVE``; flags are 0/1 integers in both); the PostgreSQL backend translates
the rest in one place (``storage/postgres.py``). Each dialect has its own numbered migrations; numbers pair up.
"""

from __future__ import annotations

import asyncio
import functools
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Coroutine, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from importlib import resources
from typing import Any, Protocol

Params = Sequence[Any] | Mapping[str, Any]

_SCHEMA_MIGRATIONS = "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT)"
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class Row(Protocol):
    """A result row: by position or by column name, and iterable (both backends' rows are)."""

    def __getitem__(self, key: Any, /) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __len__(self) -> int: ...
    def keys(self) -> list[str]: ...


class Connection(Protocol):
    """What a repository does with the connection of a transaction (``Database.transaction``). Its reads have the
    signatures of ``Database``'s: a repository reads ``(tx or db)``, through the transaction when it has one."""

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; the number of rows it changed."""
        ...

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None: ...

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None: ...


class DatabaseUnreachable(Exception):
    """The configured database cannot be opened.

    For example its server is down, or the file's folder cannot be made."""


def is_postgresql(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def migrations(folder: str) -> list[tuple[int, str, str]]:
    """``(version, file name, text)`` of the numbered migrations under ``storage/<folder>``, in order."""
    found = []
    for entry in (resources.files("storage") / folder).iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class Database(ABC):
    """Serialised write transactions on one connection, and plain reads that only see committed state.

    Transactions are serialised by a lock: the core's rules read and then write inside one transaction (a
    children cap, a compare-and-set), which is only safe when no other transaction of this process interleaves.
    """

    migrations_folder: str
    postgresql = False  # full-text search is the one query written per dialect (storage/memories.py)
    skip_locked = ""
    """Appended to a ``SELECT`` that claims rows inside a transaction: with row locks (PostgreSQL), rows another
    transaction holds are skipped rather than waited for; SQLite serialises writers, so it needs nothing."""

    def __init__(self) -> None:
        self._write_lock = asyncio.Lock()

    @staticmethod
    async def open(url: str, *, migrate: bool = True) -> Database:
        """The database at ``url``, migrated unless told not to.

        ``url``: ``postgresql://…``, ``sqlite:///path`` or a bare path."""
        if is_postgresql(url):
            from storage.postgres import PostgresDatabase

            database: Database = await PostgresDatabase.connect(url)
        else:
            from storage.sqlite import SqliteDatabase

            database = await SqliteDatabase.connect(url.removeprefix("sqlite:///"))
        if migrate:
            await database.migrate()
        return database

    @staticmethod
    async def probe(url: str) -> None:
        """Raise ``DatabaseUnreachable`` when the database at ``url`` cannot be reached. A SQLite file has nothing
        to reach (it is made, with its folder, when first opened)."""
        if is_postgresql(url):
            from storage.postgres import probe

            await probe(url)

    async def migrate(self) -> list[str]:
        """Apply the migrations not applied yet; their file names. Each is applied in a transaction that first
        takes the migration lock, so processes starting together apply each one once."""
        names = []
        for version, name, sql in migrations(self.migrations_folder):
            async with self.transaction() as tx:
                await self._lock_migrations(tx)
                await tx.execute(_SCHEMA_MIGRATIONS)
                if await tx.fetch_one("SELECT 1 FROM schema_migrations WHERE version = ?", (version,)):
                    continue
                for statement in _split_statements(sql):
                    await tx.execute(statement)
                await tx.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", (version, name))
            names.append(name)
        return names

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """Yield a connection inside a transaction, committed at the end.

        Any exception, a cancellation included, rolls it back. It gives the loop a turn first, outside the write lock: a
        transaction that meets no lock then runs through without one (:func:`_complete`), so many in a row (a burst of
        spawns, a retention pass) still let the loop go on between them, and none holds the lock while others run."""
        await asyncio.sleep(0)
        async with self._write_lock, self._writer() as connection:
            try:
                await _complete(self._begin(connection))
                yield connection
            except BaseException:
                await _complete(self._rollback(connection))
                raise
            await _complete(connection.execute("COMMIT"))

    @abstractmethod
    async def _lock_migrations(self, connection: Connection) -> None:
        """Hold other processes' migrations off until this transaction ends."""

    @abstractmethod
    def _writer(self) -> AbstractAsyncContextManager[Connection]: ...

    @abstractmethod
    async def _begin(self, connection: Connection) -> None: ...

    @abstractmethod
    async def _rollback(self, connection: Connection) -> None:
        """Roll back the transaction if it is still open."""

    @abstractmethod
    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        """Committed state only (see the class docstring); inside a transaction, read through its connection.
        ``params`` by position, or by name (``:day``) from a mapping."""

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.fetch_all(sql, params)
        return rows[0] if rows else None

    @abstractmethod
    async def notify(self, tx: Connection, channel: str, payload: str) -> None:
        """Tell every process listening to ``channel`` (:meth:`listening`) of a change, once ``tx`` commits."""

    def listening(self, channel: str) -> AbstractAsyncContextManager[AsyncIterator[str]] | None:
        """Where the store can tell of changes (PostgreSQL): a connection listening to ``channel`` from entering on,
        whose payloads come in commit order until it drops; ``None`` where it cannot."""
        return None

    @abstractmethod
    async def close(self) -> None: ...


async def _complete(statement: Coroutine[Any, Any, object]) -> None:
    """Finish a statement even if its task is cancelled, then let the cancellation through.

    A kill cancels the run's task wherever it is; a BEGIN, COMMIT or ROLLBACK abandoned half-way would leave the
    connection inside a transaction that every later one trips over.

    The statement starts at once, in this task: one that ends without suspending (SQLite's, unless another process
    holds the file) cannot be cut off, and goes to no task of its own. Only the rest of one that suspends (a
    server's round trip) runs in a shielded task. A task per statement would cost each transaction two turns of the
    event loop with the write lock held: under load the transactions would queue behind it, one per turn."""
    try:
        pending = statement.send(None)
    except StopIteration:
        return
    running = asyncio.ensure_future(_Resumed(statement, pending))
    try:
        await asyncio.shield(running)
    except asyncio.CancelledError:
        await running
        raise


class _Resumed:
    """The rest of a coroutine suspended on ``pending``, as an awaitable (a task's body).

    The coroutine has already run until it suspended. This hands the task what the coroutine waits on, and the
    coroutine what the task sends or throws back."""

    def __init__(self, coroutine: Coroutine[Any, Any, object], pending: Any) -> None:
        self._coroutine = coroutine
        self._pending = pending

    def __await__(self) -> Generator[Any, Any, object]:
        pending = self._pending
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                self._coroutine.close()
                raise
            except BaseException as error:
                step = functools.partial(self._coroutine.throw, error)
            else:
                step = functools.partial(self._coroutine.send, sent)
            try:
                pending = step()
            except StopIteration as stop:
                return stop.value


def _split_statements(sql: str) -> list[str]:
    """Split a migration into statements.

    Migrations hold no semicolons inside literals; a ``CREATE TRIGGER``'s body runs up to its ``END``."""
    body = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
    statements: list[str] = []
    pending = ""
    for part in body.split(";"):
        pending = f"{pending};{part}" if pending else part
        text = pending.strip()
        if text.upper().startswith("CREATE TRIGGER") and not text.upper().endswith("END"):
            continue
        if text:
            statements.append(text)
        pending = ""
    return statements
