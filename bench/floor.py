"""The floor: the least a durable spawn → delivered announcement can cost, for benches to compare the bot with.

Per run, by definition: insert session + run (one transaction), mark it running, append two transcript rows,
write the terminal state and an outbox row in one transaction, mark it delivered — five transactions, one task per
run, nothing else. Here on the raw driver (aiosqlite with WAL and ``synchronous=NORMAL``, or one psycopg connection
to PostgreSQL), into the real, migrated schema, one transaction at a time on one connection (the least a shared
connection needs). With an ``agent``, a bare pydantic-ai run of the task sits between running and the transcript,
and the transcript rows are its two messages: the floor of a run that also calls its model.

Use: ``async with Floor.open(url) as floor: await floor.run(task)`` (``url``: a SQLite path or ``postgresql://…``).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol, Self

import aiosqlite
import psycopg
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessagesTypeAdapter

from storage.db import Database, is_postgresql
from storage.postgres import translate

Statement = tuple[str, Sequence[Any]]
CHANNEL_ID = 2
_PAYLOAD = json.dumps({"agent_label": "main", "status": "completed", "text": "done", "channel_id": CHANNEL_ID})
_MESSAGES: tuple[str, ...] = (
    '{"kind":"request","parts":[{"content":"task"}]}',
    '{"kind":"response","parts":[{"content":"done"}]}',
)


class _Connection(Protocol):
    async def transaction(self, statements: Sequence[Statement]) -> None: ...

    async def close(self) -> None: ...


class _Sqlite:
    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._connection = connection
        self._lock = asyncio.Lock()

    @classmethod
    async def connect(cls, path: str) -> _Sqlite:
        connection = await aiosqlite.connect(path, isolation_level=None)
        for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON"):
            await connection.execute(f"PRAGMA {pragma}")
        return cls(connection)

    async def transaction(self, statements: Sequence[Statement]) -> None:
        async with self._lock:
            await self._connection.execute("BEGIN")
            for sql, params in statements:
                await self._connection.execute(sql, params)
            await self._connection.execute("COMMIT")

    async def close(self) -> None:
        await self._connection.close()


class _Postgres:
    def __init__(self, connection: psycopg.AsyncConnection[Any]) -> None:
        self._connection = connection
        self._lock = asyncio.Lock()

    @classmethod
    async def connect(cls, url: str) -> _Postgres:
        return cls(await psycopg.AsyncConnection.connect(url, autocommit=True))

    async def transaction(self, statements: Sequence[Statement]) -> None:
        async with self._lock, self._connection.transaction():
            for sql, params in statements:
                await self._connection.execute(translate(sql), params)

    async def close(self) -> None:
        await self._connection.close()


class Floor:
    def __init__(self, connection: _Connection, agent: Agent[None, str] | None) -> None:
        self._connection = connection
        self._agent = agent

    @classmethod
    @asynccontextmanager
    async def open(cls, url: str, agent: Agent[None, str] | None = None) -> AsyncIterator[Self]:
        """The floor on the database at ``url``, migrated first (by the bot's own migrations)."""
        await (await Database.open(url)).close()
        connection: _Connection = (
            await _Postgres.connect(url)
            if is_postgresql(url)
            else await _Sqlite.connect(url.removeprefix("sqlite:///"))
        )
        try:
            yield cls(connection, agent)
        finally:
            await connection.close()

    async def converse(self, task: str) -> tuple[str, ...]:
        """The bare pydantic-ai run of ``task``: its messages, one JSON object each, as the transcript stores them."""
        assert self._agent is not None, "a floor without an agent has nothing to converse with"
        result = await self._agent.run(task)
        return tuple(ModelMessagesTypeAdapter.dump_json([m]).decode()[1:-1] for m in result.new_messages())

    async def run(self, task: str) -> None:
        """One run's lifecycle, from its spawn to its announcement marked delivered."""
        run_id, session_key, key = str(uuid.uuid4()), f"agent:main:subagent:{uuid.uuid4()}", str(uuid.uuid4())
        transaction = self._connection.transaction
        await transaction(
            [
                (
                    "INSERT INTO sessions (key, agent_id, kind, depth, role, control_scope, task, channel_id, "
                    "created_at) VALUES (?, 'main', 'subagent', 1, 'leaf', 'none', ?, ?, ?)",
                    (session_key, task, CHANNEL_ID, time.time()),
                ),
                (
                    "INSERT INTO runs (id, session_key, kind, status, task, model, channel_id, created_at) "
                    "VALUES (?, ?, 'spawn', 'queued', ?, 'bench/instant', ?, ?)",
                    (run_id, session_key, task, CHANNEL_ID, time.time()),
                ),
            ]
        )
        running = "UPDATE runs SET status = 'running', started_at = ? WHERE id = ? AND status = 'queued'"
        await transaction([(running, (time.time(), run_id))])
        messages = await self.converse(task) if self._agent is not None else _MESSAGES
        append = "INSERT INTO transcript_messages (session_key, run_id, message_json, created_at) VALUES (?, ?, ?, ?)"
        await transaction([(append, (session_key, run_id, message, time.time())) for message in messages])
        await transaction(
            [
                (
                    "UPDATE runs SET status = 'completed', ended_at = ?, result_text = 'done', requests = 1 "
                    "WHERE id = ? AND status = 'running'",
                    (time.time(), run_id),
                ),
                (
                    "INSERT INTO outbox (idempotency_key, run_id, channel_id, payload_json, next_attempt_at, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (key, run_id, CHANNEL_ID, _PAYLOAD, time.time(), time.time()),
                ),
            ]
        )
        await transaction(
            [("UPDATE outbox SET status = 'delivered', delivered_at = ? WHERE idempotency_key = ?", (time.time(), key))]
        )
