"""Rows whose deadline has come, read a page at a time.

Pages come in (deadline, key) order: a table of deadlines swept together (:mod:`bot.core.deadline_sweep`) is never
read whole, a row ended meanwhile is not read again, and neither is one its owner left due."""

from __future__ import annotations

from collections.abc import AsyncIterator

from storage.db import Database, Row

PAGE = 500


async def due_rows(
    db: Database, table: str, columns: str, deadline: str, key: str, now: float, *, where: str = ""
) -> AsyncIterator[Row]:
    """``columns`` of ``table``'s rows due by ``now``, earliest first.

    Due: ``deadline`` is ``now`` or before (and the row meets ``where``). Each row ends with its deadline and its
    ``key``."""
    condition = f"{where} AND " if where else ""
    sql = (
        f"SELECT {columns}, {deadline}, {key} FROM {table} WHERE {condition}{deadline} <= ? "
        f"AND ({deadline} > ? OR ({deadline} = ? AND {key} > ?)) ORDER BY {deadline}, {key} LIMIT ?"
    )
    after: tuple[float, object] = (float("-inf"), None)
    while True:
        rows = await db.fetch_all(sql, (now, after[0], after[0], after[1], PAGE))
        for row in rows:
            yield row
        if len(rows) < PAGE:
            return
        after = (rows[-1][-2], rows[-1][-1])
