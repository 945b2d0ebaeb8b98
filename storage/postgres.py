"""The PostgreSQL backend (psycopg 3, pooled): the repositories' SQL translated in one place.

What differs from SQLite and is translated here: placeholders (``?`` and ``:name`` become ``%s`` and
``%(name)s``, a literal ``%`` is doubled), ``rowid`` (``ctid``), and ``json_each(x)`` (a JSON array's values as
rows: ``jsonb_array_elements_text``). Everything else the repositories write is SQL both dialects share.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import psycopg
from psycopg import sql as pg_sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool

from storage.db import Connection, Database, DatabaseUnreachable, Params, Row

_JSON_EACH = re.compile(r"\bjson_each\((\?|:\w+)\)", re.IGNORECASE)
_TOKENS = re.compile(r"('(?:[^']|'')*')|(\?)|(?<![:\w]):([A-Za-z_]\w*)|(%)|\b(rowid)\b", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """``sql`` as written for both dialects, in PostgreSQL's (and psycopg's placeholders)."""
    sql = _JSON_EACH.sub(r"jsonb_array_elements_text(CAST(\1 AS jsonb))", sql)

    def token(match: re.Match[str]) -> str:
        literal, positional, name, percent, _rowid = match.groups()
        if literal is not None:
            return literal.replace("%", "%%")
        if positional is not None:
            return "%s"
        if name is not None:
            return f"%({name})s"
        return "%%" if percent is not None else "ctid"

    return _TOKENS.sub(token, sql)


def _bound(params: Params) -> Sequence[Any] | Mapping[str, Any]:
    return params if isinstance(params, Mapping) else tuple(params)


class Record(tuple[Any, ...]):
    """A row, read by position or by column name.

    It equals the tuple of its values."""

    _names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> Record:
        record = super().__new__(cls, values)
        record._names = names
        return record

    def __getitem__(self, key: Any, /) -> Any:
        return super().__getitem__(self._names[key] if isinstance(key, str) else key)

    def keys(self) -> list[str]:
        return list(self._names)


def _records(cursor: psycopg.AsyncCursor[Any]) -> Callable[[Sequence[Any]], Record]:
    names = {column.name: index for index, column in enumerate(cursor.description or ())}
    return lambda values: Record(values, names)


class PostgresConnection:
    def __init__(self, connection: psycopg.AsyncConnection[Any]) -> None:
        self.raw = connection

    async def execute(self, sql: str, params: Params = ()) -> int:
        cursor = await self.raw.execute(translate(sql), _bound(params))
        return cursor.rowcount

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        async with self.raw.cursor() as cursor:
            await cursor.executemany(translate(sql), [_bound(row) for row in rows])

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        cursor = await self.raw.execute(translate(sql), _bound(params))
        return list(await cursor.fetchall())

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.fetch_all(sql, params)
        return rows[0] if rows else None


def describe(url: str) -> str:
    """The database ``url`` names, without its password."""
    parts = conninfo_to_dict(url)
    return (
        f"PostgreSQL database {parts.get('dbname', '')} at {parts.get('host', 'localhost')}:{parts.get('port', 5432)}"
    )


async def probe(url: str) -> None:
    """Connect once and let go; ``DatabaseUnreachable`` in one line (no password) when that fails."""
    try:
        connection = await psycopg.AsyncConnection.connect(url, connect_timeout=10)
    except psycopg.Error as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DatabaseUnreachable(f"{describe(url)}: {reason}") from error
    await connection.close()


_KEEPALIVES = "keepalives=1 keepalives_idle=30 keepalives_interval=10 keepalives_count=3"


class PostgresDatabase(Database):
    """A pool of connections: transactions take one (serialised by the lock), reads take another, so reads see
    committed state only."""

    migrations_folder = "migrations/postgresql"
    postgresql = True
    skip_locked = " FOR UPDATE SKIP LOCKED"

    def __init__(self, pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]], url: str) -> None:
        super().__init__()
        self._pool = pool
        self._url = url

    @classmethod
    async def connect(cls, url: str, *, max_size: int = 10) -> PostgresDatabase:
        await probe(url)
        pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
            url, min_size=1, max_size=max_size, kwargs={"autocommit": True, "row_factory": _records}, open=False
        )
        await pool.open(wait=True)
        return cls(pool, url)

    @asynccontextmanager
    async def _writer(self) -> AsyncIterator[Connection]:
        async with self._pool.connection() as connection:
            yield PostgresConnection(connection)

    async def _begin(self, connection: Connection) -> None:
        await connection.execute("BEGIN")

    async def _lock_migrations(self, connection: Connection) -> None:
        await connection.execute("SELECT pg_advisory_xact_lock(hashtext('threadbound migrations'))")

    async def _rollback(self, connection: Connection) -> None:
        assert isinstance(connection, PostgresConnection)
        if connection.raw.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
            await connection.execute("ROLLBACK")

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        async with self._pool.connection() as connection:
            return await PostgresConnection(connection).fetch_all(sql, params)

    async def notify(self, tx: Connection, channel: str, payload: str) -> None:
        await tx.execute("SELECT pg_notify(?, ?)", (channel, payload))

    def listening(self, channel: str) -> AbstractAsyncContextManager[AsyncIterator[str]]:
        return self._listening(channel)

    @asynccontextmanager
    async def _listening(self, channel: str) -> AsyncIterator[AsyncIterator[str]]:
        """A connection of its own, with TCP keepalives.

        A pooled one would be handed to others between notices. With keepalives, a connection a network dropped
        without a word ends within about a minute instead of waiting for ever."""
        url = make_conninfo(self._url, **conninfo_to_dict(_KEEPALIVES))
        connection = await psycopg.AsyncConnection.connect(url, autocommit=True)
        try:
            await connection.execute(pg_sql.SQL("LISTEN {}").format(pg_sql.Identifier(channel)))
            yield (notice.payload async for notice in connection.notifies())
        finally:
            await connection.close()

    async def close(self) -> None:
        await self._pool.close()
