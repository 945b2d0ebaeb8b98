"""The SQLite store's WAL is checkpointed by a thread of its own, not by the commits on the event loop.

Under a steady write load the WAL keeps starting over (its header's checkpoint sequence counts each time) and its file
stays small; closing the store ends the thread and leaves no WAL; two stores on one file, as two processes of the
bot, each checkpoint it in turn.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from pathlib import Path

import pytest

from storage import checkpoints
from storage.db import Database
from storage.sqlite import SqliteDatabase

pytestmark = pytest.mark.sqlite_only("SQLite's WAL and its checkpoints")

VALUE = "x" * 6000  # a row of two pages: a transcript message with a tool's long output
WRITES = 2500  # about 60 MB of WAL, were it never checkpointed
WAL_BOUND = 16 << 20  # a quarter of that; checkpointed, it stays near 5 MB


@pytest.fixture(autouse=True)
def _small(monkeypatch):
    """Looks every 20 ms, catches up past 200 frames: the test's load shows it in seconds."""
    monkeypatch.setattr(checkpoints, "INTERVAL", 0.02)
    monkeypatch.setattr(checkpoints, "PAGES", 200)


def checkpointer_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("sqlite-checkpointer")]


def restarts(wal: Path) -> int:
    """How many times the WAL has started over: its header's checkpoint sequence number."""
    with wal.open("rb") as file:
        header = file.read(32)
    return struct.unpack(">I", header[12:16])[0] if len(header) == 32 else 0


async def write(db: Database, writes: int, wal: Path, tag: str = "row") -> tuple[int, int]:
    """``writes`` transactions of a long row each; the WAL file's largest size meanwhile, and its starts over."""
    largest, started = 0, restarts(wal) if wal.exists() else 0
    for n in range(writes):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (f"{tag} {n}", VALUE))
            await tx.execute("UPDATE meta SET value = ? WHERE key = ?", (str(n), f"{tag} {n // 2}"))
        largest = max(largest, wal.stat().st_size)
        if n % 25 == 0:
            await asyncio.sleep(0.001)  # a live bot's pace: other tasks run between writes
    return largest, restarts(wal) - started


async def test_a_steady_write_load_keeps_the_wal_small_checkpointed_by_a_thread_not_the_commits(tmp_path):
    path = tmp_path / "db.sqlite3"
    wal = Path(f"{path}-wal")
    db = await Database.open(str(path))
    assert isinstance(db, SqliteDatabase)
    try:
        async with db.transaction() as tx:  # the writer's commits never checkpoint
            assert (await tx.fetch_one("PRAGMA wal_autocheckpoint"))[0] == 0

        largest, started_over = await write(db, WRITES, wal)

        assert db.checkpoints >= 5
        assert started_over >= 5
        assert largest <= WAL_BOUND
        assert len(checkpointer_threads()) == 1
        assert (await db.fetch_one("SELECT COUNT(*) FROM meta WHERE key LIKE 'row %'"))[0] == WRITES
        assert (await db.fetch_one("PRAGMA integrity_check"))[0] == "ok"
    finally:
        await db.close()


async def test_without_the_checkpointer_the_same_load_grows_the_wal_past_the_bound(tmp_path):
    """The bound above is the checkpointer's doing: the same connections with no checkpoints at all outgrow it."""
    path = tmp_path / "db.sqlite3"
    wal = Path(f"{path}-wal")
    await (await Database.open(str(path))).close()  # migrated
    db = await SqliteDatabase.connect(str(path), checkpointer=False)
    try:
        async with db.transaction() as tx:
            await tx.execute("PRAGMA wal_autocheckpoint = 0")
        largest, started_over = await write(db, WRITES, wal)
        assert largest > WAL_BOUND and started_over == 0
    finally:
        await db.close()


async def test_closing_the_store_ends_the_checkpointer_and_the_last_close_leaves_no_wal(tmp_path):
    path = tmp_path / "db.sqlite3"
    wal = Path(f"{path}-wal")
    db = await Database.open(str(path))
    await write(db, 300, wal)
    assert db.checkpoints >= 1 and checkpointer_threads()

    await db.close()

    assert checkpointer_threads() == []
    assert not wal.exists()  # the checkpointer's connection, the last, checkpointed it all
    again = await Database.open(str(path))  # after a restart: every row there, checkpointed again
    try:
        assert (await again.fetch_one("SELECT COUNT(*) FROM meta WHERE key LIKE 'row %'"))[0] == 300
        await write(again, 300, wal, tag="again")
        assert again.checkpoints >= 1
    finally:
        await again.close()
    assert checkpointer_threads() == []


async def test_two_stores_on_one_file_each_checkpoint_it_and_the_wal_stays_small(tmp_path):
    """Two processes of the bot on one SQLite file: their checkpointers take turns, and either may close first."""
    path = tmp_path / "db.sqlite3"
    wal = Path(f"{path}-wal")
    first = await Database.open(str(path))
    second = await Database.open(str(path))
    try:
        (largest_first, _), (largest_second, _) = await asyncio.gather(
            write(first, WRITES // 2, wal, tag="first"), write(second, WRITES // 2, wal, tag="second")
        )
        assert isinstance(first, SqliteDatabase) and isinstance(second, SqliteDatabase)
        assert first.checkpoints >= 1 and second.checkpoints >= 1
        assert max(largest_first, largest_second) <= WAL_BOUND
        await first.close()
        await write(second, 300, wal, tag="alone")
        rows = await second.fetch_one("SELECT COUNT(*) FROM meta WHERE key LIKE 'first %' OR key LIKE 'second %'")
        assert rows[0] == WRITES // 2 * 2
    finally:
        await first.close()  # again, if the test got that far: closing twice does nothing more
        await second.close()
    assert checkpointer_threads() == []
