"""Run inbox: internal messages (child completions) waiting for a run, consumed exactly once."""

from __future__ import annotations

from storage.db import Connection
from storage.runs import LIVE_SQL


class InboxRepository:
    async def add(self, tx: Connection, *, run_id: str, source_run_id: str, content: str, now: float) -> None:
        await tx.execute(
            "INSERT INTO run_inbox (run_id, source_run_id, content, created_at) VALUES (?, ?, ?, ?)",
            (run_id, source_run_id, content, now),
        )

    async def add_steer(self, tx: Connection, *, run_id: str, content: str, now: float) -> bool:
        """A person's (or agent's) message for ``run_id``, only while the run is live; False if it has ended, so
        the message can go elsewhere instead of waiting in an inbox nobody reads."""
        changed = await tx.execute(
            "INSERT INTO run_inbox (run_id, source_run_id, content, created_at) SELECT ?, NULL, ?, ? "
            f"WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND status IN {LIVE_SQL})",
            (run_id, content, now, run_id),
        )
        return changed == 1

    async def take_pending(self, tx: Connection, run_id: str, now: float) -> list[tuple[str | None, str]]:
        """Mark every pending message of ``run_id`` consumed, and return them.

        Each as (source run id, content)."""
        rows = await tx.fetch_all(
            "SELECT id, source_run_id, content FROM run_inbox WHERE run_id = ? AND status = 'pending' ORDER BY id",
            (run_id,),
        )
        if rows:
            await tx.executemany(
                "UPDATE run_inbox SET status = 'consumed', consumed_at = ? WHERE id = ?", [(now, r[0]) for r in rows]
            )
        return [(row[1], row[2]) for row in rows]

    async def add_while_queued(
        self, tx: Connection, *, run_id: str, source_run_id: str, content: str, now: float
    ) -> bool:
        """A completion for ``run_id``, only while that run has not started; False otherwise."""
        changed = await tx.execute(
            "INSERT INTO run_inbox (run_id, source_run_id, content, created_at) SELECT ?, ?, ?, ? "
            "WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND status = 'queued')",
            (run_id, source_run_id, content, now, run_id),
        )
        return changed == 1

    async def take_sources(self, tx: Connection, run_id: str, now: float, *, consumed_too: bool) -> list[str]:
        """The runs whose completions reached ``run_id``: those still pending (marked consumed now), and with
        ``consumed_too`` those it took already."""
        rows = await tx.fetch_all(
            "SELECT id, source_run_id, status FROM run_inbox "
            "WHERE run_id = ? AND source_run_id IS NOT NULL ORDER BY id",
            (run_id,),
        )
        pending = [row[0] for row in rows if row[2] == "pending"]
        if pending:
            await tx.executemany(
                "UPDATE run_inbox SET status = 'consumed', consumed_at = ? WHERE id = ?",
                [(now, id_) for id_ in pending],
            )
        return [row[1] for row in rows if consumed_too or row[2] == "pending"]

    async def sources_taken_before(self, tx: Connection, run_id: str, when: float) -> list[str]:
        """The runs whose completions ``run_id`` took before ``when``."""
        rows = await tx.fetch_all(
            "SELECT source_run_id FROM run_inbox WHERE run_id = ? AND source_run_id IS NOT NULL "
            "AND status = 'consumed' AND consumed_at < ? ORDER BY id",
            (run_id, when),
        )
        return [row[0] for row in rows]

    async def count_pending(self, tx: Connection, run_id: str) -> int:
        row = await tx.fetch_one("SELECT COUNT(*) FROM run_inbox WHERE run_id = ? AND status = 'pending'", (run_id,))
        assert row is not None, "COUNT(*) always returns one row"
        return row[0]
