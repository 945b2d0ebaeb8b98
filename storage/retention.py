"""Retention repository: deletes what the retention policy lets go, one small transaction per call, so the
caller can yield between calls and the writes of live runs interleave with a long pass.

Each call deletes at most ``limit`` rows of what it prunes (transcript rows: and the rest of the runs those belong
to) and returns the rows deleted per table; no rows deleted means nothing (more) is due.
"""

from __future__ import annotations

import json
from collections import Counter

from storage.db import Database
from storage.runs import LIVE_SQL

# An archived session may go once nothing holds on to it: no child session (trees go leaves first, over successive
# calls), no bound thread, and no run of it that is live, parent of another session's run, or owed something
# pending (an announcement to post, an inbox message to read).
_PRUNABLE_SESSIONS = f"""
SELECT s.key FROM sessions s
WHERE s.archived_at < :cutoff
  AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.requester_session_key = s.key)
  AND NOT EXISTS (SELECT 1 FROM thread_bindings b WHERE b.session_key = s.key)
  AND NOT EXISTS (
    SELECT 1 FROM runs r WHERE r.session_key = s.key AND (
      r.status IN {LIVE_SQL}
      OR EXISTS (SELECT 1 FROM runs o WHERE o.parent_run_id = r.id AND o.session_key <> s.key)
      OR EXISTS (SELECT 1 FROM outbox x WHERE x.run_id = r.id AND x.status = 'pending')
      OR EXISTS (SELECT 1 FROM run_inbox i WHERE i.run_id = r.id AND i.status = 'pending')
      OR EXISTS (SELECT 1 FROM run_inbox i WHERE i.source_run_id = r.id AND i.status = 'pending')
      OR EXISTS (SELECT 1 FROM thread_bindings b WHERE b.ends_with_run_id = r.id)))
ORDER BY s.archived_at
LIMIT :limit
"""
_KEYS = "SELECT value FROM json_each(:keys)"
_RUNS = f"SELECT id FROM runs WHERE session_key IN ({_KEYS})"
# A conversation's main session lives on, but its turns (runs) that ended before the cutoff go, with what hangs off
# them, once nothing holds on to them: no run they started (their sub-agents' sessions go first), nothing pending.
_OLD_TURNS = f"""
SELECT r.id FROM runs r JOIN sessions s ON s.key = r.session_key
WHERE r.ended_at < :cutoff AND r.status NOT IN {LIVE_SQL} AND s.kind = 'main' AND s.archived_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.parent_run_id = r.id)
  AND NOT EXISTS (SELECT 1 FROM outbox x WHERE x.run_id = r.id AND x.status = 'pending')
  AND NOT EXISTS (SELECT 1 FROM run_inbox i WHERE i.run_id = r.id AND i.status = 'pending')
  AND NOT EXISTS (SELECT 1 FROM run_inbox i WHERE i.source_run_id = r.id AND i.status = 'pending')
  AND NOT EXISTS (SELECT 1 FROM thread_bindings b WHERE b.ends_with_run_id = r.id)
ORDER BY r.ended_at
LIMIT :limit
"""


def _dependents(runs: str, transcripts: str) -> tuple[tuple[str, str], ...]:
    """What references the runs going (``runs``: a query of their ids), deleted before them (foreign keys are on).
    audit_log is not here: it keeps the ids of pruned runs (migration 0012)."""
    return (
        ("transcript_messages", transcripts),
        ("run_inbox", f"run_id IN ({runs}) OR source_run_id IN ({runs})"),
        ("outbox", f"run_id IN ({runs})"),
        ("status_messages", f"run_id IN ({runs})"),
        ("approvals", f"run_id IN ({runs})"),
        ("delegate_tasks", f"run_id IN ({runs})"),
        ("run_steps", f"run_id IN ({runs})"),
        ("run_attachments", f"run_id IN ({runs})"),
        ("run_files", f"run_id IN ({runs})"),
        ("run_drafts", f"run_id IN ({runs})"),
    )


_SESSION_DEPENDENTS = (
    *_dependents(_RUNS, f"session_key IN ({_KEYS}) OR run_id IN ({_RUNS})"),
    ("memory_allowlists", f"session_key IN ({_KEYS})"),
)
_TURN_DEPENDENTS = _dependents(_KEYS, f"run_id IN ({_KEYS})")
# A run's transcript rows go together, once the run ended before the cutoff: a history cut inside a run could
# start with a tool return whose call is gone, which providers refuse. So a batch takes ``limit`` due rows and the
# rest of the runs they belong to (a live turn may read its session's history between two batches). Context rows
# (no run) stand alone.
_OLD_TRANSCRIPT_ROWS = """
WITH due AS MATERIALIZED (
  SELECT t.id, t.run_id FROM transcript_messages t LEFT JOIN runs r ON r.id = t.run_id
  WHERE t.created_at < :cutoff AND (t.run_id IS NULL OR r.ended_at < :cutoff)
  LIMIT :limit)
SELECT id FROM due UNION SELECT id FROM transcript_messages WHERE run_id IN (SELECT run_id FROM due)
"""
# Delivered rows, and failed ones (given up on; their requester was told by a notice row of its own). Never a
# pending row. created_at is never later than delivery, which gives up within discord.delivery_give_up_after.
_OLD_OUTBOX_ROWS = "SELECT id FROM outbox WHERE status <> 'pending' AND created_at < :cutoff LIMIT :limit"


# Memories stored (or last replaced) before the cutoff; SQLite's triggers take their search rows with them.
_OLD_MEMORIES = "SELECT id FROM memories WHERE created_at < :cutoff ORDER BY created_at LIMIT :limit"


class RetentionRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def prune_sessions(self, cutoff: float, limit: int) -> Counter[str]:
        """Delete up to ``limit`` sessions archived before ``cutoff`` with everything hanging off them. Their
        dependent rows go ``limit`` at a time: a call that uses up the budget on them leaves the sessions for a
        later call (they stay prunable). Oldest first by the index alone: a tie-break would sort every tie (all
        the sessions archived in the same second, say) on every call."""
        owners = (("runs", f"session_key IN ({_KEYS})"), ("sessions", f"key IN ({_KEYS})"))
        return await self._delete_with_dependents(_PRUNABLE_SESSIONS, _SESSION_DEPENDENTS, owners, cutoff, limit)

    async def prune_turns(self, cutoff: float, limit: int) -> Counter[str]:
        """Delete up to ``limit`` turns that ended before ``cutoff``, and what hangs off them.

        Only turns of conversations' main sessions. A call that uses up the budget on what hangs off them leaves
        the turns for a later call."""
        owners = (("runs", f"id IN ({_KEYS})"),)
        return await self._delete_with_dependents(_OLD_TURNS, _TURN_DEPENDENTS, owners, cutoff, limit)

    async def _delete_with_dependents(
        self,
        select: str,
        dependents: tuple[tuple[str, str], ...],
        owners: tuple[tuple[str, str], ...],
        cutoff: float,
        limit: int,
    ) -> Counter[str]:
        """One transaction: the keys ``select`` finds, the rows that depend on them (``limit`` at most, or the
        owners stay for a later call), then the owners themselves."""
        deleted: Counter[str] = Counter()
        async with self._db.transaction() as tx:
            rows = await tx.fetch_all(select, {"cutoff": cutoff, "limit": limit})
            if not rows:
                return deleted
            keys = json.dumps([row[0] for row in rows])
            budget = limit
            for table, belongs in dependents:
                changed = await tx.execute(
                    f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE {belongs} LIMIT :limit)",
                    {"keys": keys, "limit": budget},
                )
                deleted[table] += changed
                budget -= changed
                if budget == 0:
                    return deleted
            for table, belongs in owners:
                changed = await tx.execute(f"DELETE FROM {table} WHERE {belongs}", {"keys": keys})
                deleted[table] += changed
        return deleted

    async def prune_transcripts(self, cutoff: float, limit: int) -> Counter[str]:
        """Delete ``limit`` transcript rows of runs that ended before ``cutoff``.

        Of any session; and the rest of those runs' rows."""
        return await self._delete("transcript_messages", _OLD_TRANSCRIPT_ROWS, cutoff, limit)

    async def prune_outbox(self, cutoff: float, limit: int) -> Counter[str]:
        """Delete up to ``limit`` finished outbox rows written before ``cutoff``."""
        return await self._delete("outbox", _OLD_OUTBOX_ROWS, cutoff, limit)

    async def prune_memories(self, cutoff: float, limit: int) -> Counter[str]:
        """Delete up to ``limit`` memories stored before ``cutoff``, oldest first."""
        return await self._delete("memories", _OLD_MEMORIES, cutoff, limit)

    async def _delete(self, table: str, select: str, cutoff: float, limit: int) -> Counter[str]:
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                f"DELETE FROM {table} WHERE id IN ({select})", {"cutoff": cutoff, "limit": limit}
            )
        return Counter({table: changed})
