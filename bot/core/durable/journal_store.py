"""Where DBOS keeps the durable runs' journal, and how that database is set up.

The journal is ``durable.durable_runs``'s. With PostgreSQL it is the store's own database (DBOS's tables in its
``dbos`` schema); with SQLite a file next to the store's, in WAL mode and committing as the store does."""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from dbos import DBOS
from sqlalchemy import event
from sqlalchemy.engine import Engine

from bot.config import DurabilityConfig, StorageConfig
from storage.db import is_postgresql

NOTICE_POLL_SECONDS = 0.1  # how often DBOS looks for notifications in a SQLite journal; also how long a stop waits
# How many threads DBOS writes its journal from; they are also the loop's ``asyncio.to_thread`` threads. DBOS's own
# default has no bound: thousands of runs at once would each take a thread, all waiting for one of its pool's
# connections and contending for the GIL with the event loop's thread, whose every store statement gives the GIL up.
# Fewer than DBOS's pool has connections, so that its pollers always find one. A SQLite journal takes one writer at a
# time: two threads, so that a read never waits behind a write; PostgreSQL writes in parallel: eight.
SQLITE_THREADS = 2
POSTGRESQL_THREADS = 8


@event.listens_for(Engine, "connect")
def _commit_like_the_store(connection: Any, record: Any) -> None:
    """Make DBOS's journal in a SQLite file commit as the store does.

    That is WAL with ``synchronous = NORMAL``: a commit does not wait for the disk, so a run's steps add no waits for
    it. A killed process loses nothing; a power cut may lose the last commits of both files, as it would the store's
    alone. (Only DBOS uses SQLAlchemy here.)"""
    if isinstance(connection, sqlite3.Connection):
        connection.execute("PRAGMA synchronous = NORMAL")


def _prepare(path: Path) -> None:
    """Put the file in WAL mode before DBOS creates its tables in it.

    A checkpoint takes less time in WAL mode than in SQLite's rollback journal."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
    finally:
        connection.close()


def executor_threads(journal_url: str) -> int:
    """How many threads DBOS journals from, for the journal at ``journal_url``."""
    return POSTGRESQL_THREADS if is_postgresql(journal_url) else SQLITE_THREADS


def url(config: DurabilityConfig, storage: StorageConfig) -> str:
    """Where DBOS keeps its journal: ``system_database`` if set, else the PostgreSQL store, else the SQLite file."""
    chosen = config.system_database or (storage.url if storage.url and is_postgresql(storage.url) else None)
    if chosen is not None and is_postgresql(chosen):
        return chosen
    return f"sqlite:///{Path(chosen or f'{storage.local_file}.dbos').resolve()}"


async def migrate(url: str) -> None:
    """Create or migrate DBOS's tables (a SQLite file is put in WAL mode first)."""
    if not is_postgresql(url):
        await asyncio.to_thread(_prepare, Path(url.removeprefix("sqlite:///")))
    await asyncio.to_thread(DBOS.migrate, url)


async def destroy() -> None:
    """Stop DBOS from another thread while this loop runs on: its queue workers hand workflows to this loop and wait
    until it takes them (a loop blocked in the stop left each stuck until a 10 s join gave up on it). DBOS made its
    executor the loop's default one (``asyncio.to_thread``) and shuts it down: the loop gets a fresh one first."""
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
    await asyncio.to_thread(DBOS.destroy)
