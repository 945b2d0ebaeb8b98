"""SQLite statements run on the event loop's thread: while another process holds the database's write lock, a
transaction waits for it without blocking the loop, and goes through once it is free; a lock held past 5 s fails
the transaction with SQLite's own error, as ``busy_timeout = 5000`` did."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

from storage import sqlite as sqlite_store
from storage.db import Database
from tests.polling import stays

pytestmark = pytest.mark.sqlite_only("SQLite's file lock, taken by a second connection as another process would")


async def _ticks_while(work: asyncio.Future[object]) -> int:
    ticks = 0
    while not work.done():
        await asyncio.sleep(0.005)
        ticks += 1
    return ticks


async def _write(db: Database, value: str, key: str = "ours") -> None:
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))


async def test_a_transaction_waits_for_another_process_lock_without_blocking_the_loop(tmp_path):
    path = tmp_path / "db.sqlite3"
    db = await Database.open(str(path))
    other = sqlite3.connect(path, isolation_level=None)  # another process's connection
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO meta (key, value) VALUES ('other', 'first')")
        writing = asyncio.ensure_future(_write(db, "second"))
        await stays(lambda: not writing.done(), for_seconds=0.3, describe="the write waiting for the lock")
        assert not writing.done()  # still waiting for the lock
        asyncio.get_running_loop().call_later(0.2, other.execute, "COMMIT")
        ticks = await _ticks_while(writing)
        await writing
        assert ticks >= 10  # the loop went on while it waited
        rows = await db.fetch_all("SELECT key FROM meta WHERE key IN ('other', 'ours') ORDER BY rowid")
        assert [row[0] for row in rows] == ["other", "ours"]
        async with db.transaction() as tx:  # and the next transaction starts cleanly
            await tx.execute("UPDATE meta SET value = 'again' WHERE key = 'ours'")
    finally:
        other.close()
        await db.close()


async def test_a_lock_held_too_long_fails_the_transaction_and_leaves_nothing_half_written(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_store, "_BUSY_SECONDS", 0.5)
    path = tmp_path / "db.sqlite3"
    db = await Database.open(str(path))
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            async with db.transaction() as tx:
                await tx.execute("INSERT INTO meta (key, value) VALUES ('ours', 'lost')")
        assert time.monotonic() - started >= 0.5
        other.execute("ROLLBACK")
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO meta (key, value) VALUES ('ours', 'kept')")
        assert [row[0] for row in await db.fetch_all("SELECT value FROM meta WHERE key = 'ours'")] == ["kept"]
    finally:
        other.close()
        await db.close()


async def test_a_transaction_cancelled_while_it_waits_for_another_process_lock_begins_then_rolls_back(tmp_path):
    path = tmp_path / "db.sqlite3"
    db = await Database.open(str(path))
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        writing = asyncio.ensure_future(_write(db, "cancelled"))
        await asyncio.sleep(0.1)  # its BEGIN is under way, waiting for the lock
        writing.cancel()  # while its BEGIN waits: the BEGIN goes on
        await stays(lambda: not writing.done(), for_seconds=0.1, describe="the cancelled BEGIN still waiting")
        assert not writing.done()
        other.execute("COMMIT")
        with pytest.raises(asyncio.CancelledError):
            await writing
        await _write(db, "kept")  # the BEGIN it finished was rolled back: the next one starts cleanly
        assert [row[0] for row in await db.fetch_all("SELECT value FROM meta WHERE key = 'ours'")] == ["kept"]
    finally:
        other.close()
        await db.close()


async def test_transactions_that_meet_no_lock_hold_it_through_no_turn_of_the_loop_and_give_one_between(tmp_path):
    """Statements, BEGIN and COMMIT included, run through in the calling task: a turn of the loop with the write lock
    held made, under load, every other transaction wait a turn too. Many in a row still let the loop go on."""
    db = await Database.open(str(tmp_path / "db.sqlite3"))
    seen_locked: list[bool] = []

    async def watch() -> None:
        while True:
            seen_locked.append(db._write_lock.locked())
            await asyncio.sleep(0)

    watching = asyncio.ensure_future(watch())
    try:
        await asyncio.sleep(0)
        for n in range(50):
            await _write(db, "row", key=f"ours {n}")
    finally:
        watching.cancel()
        await db.close()
    assert len(seen_locked) >= 50 and not any(seen_locked)
