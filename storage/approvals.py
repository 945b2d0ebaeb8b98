"""Approvals repository: the ``always_ask`` tool calls runs paused on, their decisions and their Discord messages."""

from __future__ import annotations

from collections.abc import Sequence

from bot.records import Approval, ApprovalStatus
from storage.db import Connection, Database, Row

_COLUMNS = (
    "id, run_id, tool_call_id, tool_name, arguments, channel_id, owner_user_id, created_at, deadline, status, "
    "decided_by, decided_at, consumed, message_id, shown"
)


def _approval(row: Row) -> Approval:
    return Approval(
        id=row["id"],
        run_id=row["run_id"],
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        arguments=row["arguments"],
        channel_id=row["channel_id"],
        owner_user_id=row["owner_user_id"],
        created_at=row["created_at"],
        deadline=row["deadline"],
        status=ApprovalStatus(row["status"]),
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        consumed=bool(row["consumed"]),
        message_id=row["message_id"],
        shown=ApprovalStatus(row["shown"]) if row["shown"] else None,
    )


class ApprovalRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, tx: Connection, approvals: Sequence[Approval]) -> None:
        await tx.executemany(
            "INSERT INTO approvals (id, run_id, tool_call_id, tool_name, arguments, channel_id, owner_user_id, "
            "created_at, deadline) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    a.id,
                    a.run_id,
                    a.tool_call_id,
                    a.tool_name,
                    a.arguments,
                    a.channel_id,
                    a.owner_user_id,
                    a.created_at,
                    a.deadline,
                )
                for a in approvals
            ],
        )

    async def get(self, approval_id: str, tx: Connection | None = None) -> Approval | None:
        sql, params = f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (approval_id,)
        rows = await (tx or self._db).fetch_all(sql, params)
        return next((_approval(row) for row in rows), None)

    async def decide(
        self, tx: Connection, approval_id: str, status: ApprovalStatus, by: int | None, now: float
    ) -> bool:
        """Settle a pending approval; False if it was no longer pending (decided once, whoever was first)."""
        changed = await tx.execute(
            "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ? WHERE id = ? AND status = 'pending'",
            (status.value, by, now, approval_id),
        )
        return changed == 1

    async def cancel_for_runs(self, tx: Connection, run_ids: Sequence[str], now: float) -> list[str]:
        """The pending approvals of runs that ended, cancelled; their ids."""
        cancelled = []
        for run_id in run_ids:
            rows = await tx.fetch_all(
                "UPDATE approvals SET status = 'cancelled', decided_at = ? WHERE run_id = ? AND status = 'pending' "
                "RETURNING id",
                (now, run_id),
            )
            cancelled += [row[0] for row in rows]
        return cancelled

    async def count_pending(self, tx: Connection, run_id: str) -> int:
        rows = list(
            await tx.fetch_all("SELECT COUNT(*) FROM approvals WHERE run_id = ? AND status = 'pending'", (run_id,))
        )
        return int(rows[0][0])

    async def take_decided(self, tx: Connection, run_id: str) -> list[Approval]:
        """The run's decisions its model has not seen yet, now marked as seen.

        Seen: the decision has reached the run's model."""
        rows = await tx.fetch_all(
            f"SELECT {_COLUMNS} FROM approvals WHERE run_id = ? AND consumed = 0 AND status != 'pending' "
            "ORDER BY created_at, id",
            (run_id,),
        )
        await tx.execute(
            "UPDATE approvals SET consumed = 1 WHERE run_id = ? AND consumed = 0 AND status != 'pending'", (run_id,)
        )
        return [_approval(row) for row in rows]

    async def pending(self) -> list[Approval]:
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM approvals WHERE status = 'pending'")
        return [_approval(row) for row in rows]

    async def unshown(self) -> list[Approval]:
        """Approvals whose message is missing or out of date.

        Missing: not posted yet; out of date: it shows a status that is no longer theirs."""
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM approvals WHERE shown IS NULL OR shown != status ORDER BY created_at"
        )
        return [_approval(row) for row in rows]

    async def shown_as(self, tx: Connection, approval_id: str, status: ApprovalStatus, message_id: int | None) -> None:
        await tx.execute(
            "UPDATE approvals SET shown = ?, message_id = COALESCE(?, message_id) WHERE id = ?",
            (status.value, message_id, approval_id),
        )
