"""A task cancelled at any point of a transaction (a kill cancels a run's task wherever it is) leaves the shared
connection clean: the next transaction starts, and the cancelled one's writes are all there or none are."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from storage.db import Database
from tests import stores


@pytest.mark.parametrize("yields_before_cancel", range(12))
async def test_a_cancelled_transaction_leaves_no_transaction_open(tmp_path, yields_before_cancel):
    db = await Database.open(stores.database(tmp_path / "db.sqlite3"))
    try:
        async with db.transaction() as tx:
            await tx.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")

        async def write() -> None:
            async with db.transaction() as tx:
                await tx.execute("INSERT INTO notes (id, text) VALUES (1, 'a')")
                await tx.execute("INSERT INTO notes (id, text) VALUES (2, 'b')")

        task = asyncio.create_task(write())
        for _ in range(yields_before_cancel):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes (id, text) VALUES (3, 'after')")
        texts = [row[0] for row in await db.fetch_all("SELECT text FROM notes ORDER BY id")]
    finally:
        await db.close()
    assert texts in (["after"], ["a", "b", "after"])
