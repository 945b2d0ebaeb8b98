"""Delegate task records: one row per ``delegate`` child run, settled in the transaction that ends the run."""

from __future__ import annotations

from bot.records import DelegateTask, TaskStatus
from storage.db import Connection, Database, Row

_COLUMNS = (
    "task_id, run_id, caller_session_key, agent, header, background, status, output, error, note, started_at, "
    "finished_at, deadline"
)


def _from_row(row: Row) -> DelegateTask:
    values = dict(zip(row.keys(), row, strict=True))
    return DelegateTask(**{**values, "background": bool(values["background"]), "status": TaskStatus(values["status"])})


class DelegateTaskRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, tx: Connection, task: DelegateTask) -> None:
        await tx.execute(
            f"INSERT INTO delegate_tasks ({_COLUMNS}) VALUES ({', '.join('?' * 13)})",
            (
                task.task_id,
                task.run_id,
                task.caller_session_key,
                task.agent,
                task.header,
                int(task.background),
                task.status,
                task.output,
                task.error,
                task.note,
                task.started_at,
                task.finished_at,
                task.deadline,
            ),
        )

    async def get(self, task_id: str, tx: Connection | None = None) -> DelegateTask | None:
        sql, params = f"SELECT {_COLUMNS} FROM delegate_tasks WHERE task_id = ?", (task_id,)
        row = await (tx or self._db).fetch_one(sql, params)
        return _from_row(row) if row else None

    async def for_run(self, run_id: str, tx: Connection | None = None) -> DelegateTask | None:
        sql, params = f"SELECT {_COLUMNS} FROM delegate_tasks WHERE run_id = ?", (run_id,)
        row = await (tx or self._db).fetch_one(sql, params)
        return _from_row(row) if row else None

    async def background_of(self, caller_session_key: str) -> list[DelegateTask]:
        """The background tasks a session started, oldest first."""
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM delegate_tasks WHERE caller_session_key = ? AND background = 1 "
            "ORDER BY started_at, task_id",
            (caller_session_key,),
        )
        return [_from_row(row) for row in rows]

    async def of_runs(self, run_ids: list[str]) -> dict[str, DelegateTask]:
        """The task records of these runs, by run id.

        Runs that are no delegation have none."""
        if not run_ids:
            return {}
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM delegate_tasks WHERE run_id IN ({', '.join('?' * len(run_ids))})", run_ids
        )
        return {task.run_id: task for task in map(_from_row, rows)}

    async def running(self) -> list[DelegateTask]:
        """Every task still running, background or not (their deadlines are rebuilt at start-up)."""
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM delegate_tasks WHERE status = 'running'")
        return [_from_row(row) for row in rows]

    async def count_running_background(self) -> int:
        row = await self._db.fetch_one(
            "SELECT COUNT(*) FROM delegate_tasks WHERE status = 'running' AND background = 1"
        )
        assert row is not None
        return int(row[0])

    async def finish(
        self,
        tx: Connection,
        task_id: str,
        status: TaskStatus,
        now: float,
        *,
        output: str | None = None,
        error: str | None = None,
        note: str | None = None,
    ) -> bool:
        """Settle a running task; False if it had settled already (the first settlement stands)."""
        changed = await tx.execute(
            "UPDATE delegate_tasks SET status = ?, output = ?, error = ?, note = ?, finished_at = ? "
            "WHERE task_id = ? AND status = 'running'",
            (status, output, error, note, now, task_id),
        )
        return changed == 1
