"""Processes repository: one row per bot process sharing the store, by executor id, with its heartbeat. Every change
is one conditional statement, so two processes racing for a row (two starts, two janitors) get it at most once."""

from __future__ import annotations

from dataclasses import dataclass

from storage.db import Connection, Database


@dataclass(frozen=True)
class ProcessRow:
    executor_id: str
    pid: int
    host: str
    shards: str | None
    started_at: float
    heartbeat_at: float
    claimed_by: str | None


class ProcessRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, executor_id: str) -> ProcessRow | None:
        row = await self._db.fetch_one(
            "SELECT executor_id, pid, host, shards, started_at, heartbeat_at, claimed_by FROM processes "
            "WHERE executor_id = ?",
            (executor_id,),
        )
        return ProcessRow(*row) if row else None

    async def insert(self, tx: Connection, process: ProcessRow) -> bool:
        """Register a process under an executor id nobody holds; False if a row appeared meanwhile."""
        return (
            await tx.execute(
                "INSERT INTO processes (executor_id, pid, host, shards, started_at, heartbeat_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (executor_id) DO NOTHING",
                (
                    process.executor_id,
                    process.pid,
                    process.host,
                    process.shards,
                    process.started_at,
                    process.heartbeat_at,
                ),
            )
            == 1
        )

    async def take_over(self, tx: Connection, seen: ProcessRow, process: ProcessRow) -> bool:
        """Register a process in place of the row ``seen``; False if that row changed meanwhile.

        ``seen`` is dead, an earlier run of this same process, or a claim whose claimer died. It changed if its
        holder beat, or another process took it first."""
        return (
            await tx.execute(
                "UPDATE processes SET pid = ?, host = ?, shards = ?, started_at = ?, heartbeat_at = ?, "
                "claimed_by = NULL "
                "WHERE executor_id = ? AND pid = ? AND heartbeat_at = ?",
                (
                    process.pid,
                    process.host,
                    process.shards,
                    process.started_at,
                    process.heartbeat_at,
                    seen.executor_id,
                    seen.pid,
                    seen.heartbeat_at,
                ),
            )
            == 1
        )

    async def beat(self, tx: Connection, executor_id: str, pid: int, now: float) -> bool:
        """This process is alive; False if its row is no longer its own (claimed as dead, or taken over)."""
        return (
            await tx.execute(
                "UPDATE processes SET heartbeat_at = ? WHERE executor_id = ? AND pid = ? AND claimed_by IS NULL",
                (now, executor_id, pid),
            )
            == 1
        )

    async def stop(self, tx: Connection, executor_id: str, pid: int) -> None:
        """A process that closes cleanly: its heartbeat ends now, so a live process takes its runs over at once (or
        it takes them back itself when it starts again first)."""
        await tx.execute(
            "UPDATE processes SET heartbeat_at = 0 WHERE executor_id = ? AND pid = ? AND claimed_by IS NULL",
            (executor_id, pid),
        )

    async def expired(self, cutoff: float, but: str) -> list[ProcessRow]:
        """Processes (other than ``but``) whose heartbeat, or whose claimer's, is older than ``cutoff``."""
        rows = await self._db.fetch_all(
            "SELECT executor_id, pid, host, shards, started_at, heartbeat_at, claimed_by FROM processes "
            "WHERE heartbeat_at < ? AND executor_id != ? ORDER BY executor_id",
            (cutoff, but),
        )
        return [ProcessRow(*row) for row in rows]

    async def claim(self, tx: Connection, dead: ProcessRow, claimer: str, now: float) -> bool:
        """Mark a dead process as being recovered by ``claimer``; False if another process claimed it first or it
        came back (its row changed since it was read)."""
        return (
            await tx.execute(
                "UPDATE processes SET claimed_by = ?, heartbeat_at = ? "
                "WHERE executor_id = ? AND pid = ? AND heartbeat_at = ?",
                (claimer, now, dead.executor_id, dead.pid, dead.heartbeat_at),
            )
            == 1
        )

    async def release(self, tx: Connection, executor_id: str, claimer: str) -> None:
        """A dead process fully recovered: its row goes, and its executor id is free again."""
        await tx.execute("DELETE FROM processes WHERE executor_id = ? AND claimed_by = ?", (executor_id, claimer))
