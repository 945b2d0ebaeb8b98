"""Run files repository: the files a run's agent returned (``attach_file``), in the order it attached them."""

from __future__ import annotations

from bot.records import RunFile
from storage.db import Connection, Database

_COLUMNS = "run_id, name, size, position, created_at"


class RunFileRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def of_run(self, tx: Connection, run_id: str) -> list[RunFile]:
        """The run's files (without their content), as this transaction sees them."""
        rows = await tx.fetch_all(f"SELECT {_COLUMNS} FROM run_files WHERE run_id = ? ORDER BY position", (run_id,))
        return [RunFile(*row) for row in rows]

    async def listed(self, run_id: str) -> list[RunFile]:
        """The run's files (without their content), as committed."""
        async with self._db.transaction() as tx:
            return await self.of_run(tx, run_id)

    async def put(self, tx: Connection, run_id: str, name: str, content: str, now: float) -> RunFile:
        """Store a file of the run; one of the same name is replaced, keeping its place."""
        size = len(content.encode("utf-8"))
        row = await tx.fetch_one(
            "INSERT INTO run_files (run_id, name, content, size, position, created_at) VALUES (?, ?, ?, ?, "
            "(SELECT COUNT(*) FROM run_files WHERE run_id = ?), ?) ON CONFLICT (run_id, name) DO UPDATE SET "
            f"content = excluded.content, size = excluded.size, created_at = excluded.created_at RETURNING {_COLUMNS}",
            (run_id, name, content, size, run_id, now),
        )
        assert row is not None
        return RunFile(*row)

    async def contents(self, run_id: str) -> dict[str, bytes]:
        """Each of the run's files by name: its bytes."""
        rows = await self._db.fetch_all("SELECT name, content FROM run_files WHERE run_id = ?", (run_id,))
        return {name: content.encode("utf-8") for name, content in rows}
