"""Audit log repository: who did what to whose run, and when."""

from __future__ import annotations

from dataclasses import dataclass

from storage.db import Connection


@dataclass(frozen=True)
class AuditEntry:
    guild_id: int | None
    actor_user_id: int
    target_user_id: int | None
    action: str
    run_id: str | None
    detail: str | None
    created_at: float


class AuditRepository:
    async def record(self, tx: Connection, entry: AuditEntry) -> None:
        await tx.execute(
            "INSERT INTO audit_log (guild_id, actor_user_id, target_user_id, action, run_id, detail, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                entry.guild_id,
                entry.actor_user_id,
                entry.target_user_id,
                entry.action,
                entry.run_id,
                entry.detail,
                entry.created_at,
            ),
        )
