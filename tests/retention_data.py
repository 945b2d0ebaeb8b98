"""A database full of old rows, for retention's test and its benchmark (``bench/retention_stall.py``): what a
busy bot leaves behind after months, written with ``executemany`` in one transaction. Every row is marked with
whether a pass of the default policy (30 days for everything) at :data:`NOW` keeps it."""

from __future__ import annotations

import itertools
from collections import defaultdict

from storage.db import Database

NOW = 2_000_000_000.0
DAY = 86_400.0
OLD = NOW - 40 * DAY
RECENT = NOW - 10 * DAY

_INSERTS = {
    "sessions": "INSERT INTO sessions (key, agent_id, kind, depth, role, control_scope, requester_session_key, "
    "channel_id, created_at, archived_at) VALUES (?, 'main', ?, ?, ?, 'none', ?, 1, ?, ?)",
    "runs": "INSERT INTO runs (id, session_key, parent_run_id, kind, status, task, model, channel_id, created_at, "
    "ended_at, input_tokens) VALUES (?, ?, ?, 'spawn', ?, 'task', 'test/m', 1, ?, ?, 100)",
    "transcript_messages": "INSERT INTO transcript_messages (id, session_key, run_id, message_json, created_at) "
    "VALUES (?, ?, ?, '{}', ?)",
    "outbox": "INSERT INTO outbox (id, idempotency_key, run_id, channel_id, payload_json, status, next_attempt_at, "
    "created_at, delivered_at) VALUES (?, ?, ?, 1, '{}', ?, ?, ?, ?)",
    "status_messages": "INSERT INTO status_messages (run_id, channel_id, message_id) VALUES (?, 1, 1)",
    "run_inbox": "INSERT INTO run_inbox (id, run_id, source_run_id, content, status, created_at) "
    "VALUES (?, ?, ?, 'done', ?, ?)",
    "approvals": "INSERT INTO approvals (id, run_id, tool_call_id, tool_name, arguments, channel_id, created_at, "
    "deadline, status) VALUES (?, ?, 'call', 'tool', '{}', 1, ?, ?, 'approved')",
    "delegate_tasks": "INSERT INTO delegate_tasks (task_id, run_id, caller_session_key, agent, header, background, "
    "status, started_at, deadline) VALUES (?, ?, ?, 'main', 'h', 1, 'completed', ?, ?)",
    "audit_log": "INSERT INTO audit_log (id, actor_user_id, action, run_id, created_at) VALUES (?, 1, 'kill', ?, ?)",
    "thread_bindings": "INSERT INTO thread_bindings (thread_id, session_key, bound_at, last_activity_at, "
    "ends_with_run_id, idle_seconds, max_age_seconds) VALUES (?, ?, ?, ?, ?, 0, 0)",
}
KEY_COLUMNS = {
    "sessions": "key",
    "runs": "id",
    "transcript_messages": "id",
    "outbox": "id",
    "status_messages": "run_id",
    "run_inbox": "id",
    "approvals": "id",
    "delegate_tasks": "task_id",
    "audit_log": "id",
    "thread_bindings": "thread_id",
}


class Rows:
    """Rows to insert per table, and the keys of those a pass must keep."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[object, ...]]] = defaultdict(list)
        self.kept: dict[str, set[object]] = {table: set() for table in _INSERTS}
        self._ids = itertools.count(1)

    def add(self, table: str, row: tuple[object, ...], *, keep: bool) -> object:
        self.rows[table].append(row)
        if keep:
            self.kept[table].add(row[0])
        return row[0]

    def next_id(self) -> int:
        return next(self._ids)

    def total(self) -> int:
        return sum(len(rows) for rows in self.rows.values())

    async def write(self, db: Database) -> None:
        async with db.transaction() as tx:
            for table, sql in _INSERTS.items():
                await tx.executemany(sql, self.rows[table])

    def session(
        self, key: str, *, keep: bool, archived_at: float | None, requester: str | None = None, depth: int = 1
    ) -> str:
        kind, role = ("main", "main") if depth == 0 else ("subagent", "leaf")
        self.add("sessions", (key, kind, depth, role, requester, OLD, archived_at), keep=keep)
        return key

    def run(
        self, session: str, *, keep: bool, ended_at: float | None, parent: str | None = None, status: str = "completed"
    ) -> str:
        run_id = f"run-{self.next_id()}"
        return str(self.add("runs", (run_id, session, parent, status, OLD, ended_at), keep=keep))

    def transcript(self, session: str, run: str | None, at: float, *, keep: bool, count: int = 1) -> None:
        for _ in range(count):
            self.add("transcript_messages", (self.next_id(), session, run, at), keep=keep)

    def outbox(self, run: str | None, at: float, *, keep: bool, status: str = "delivered") -> None:
        row_id = self.next_id()
        delivered = at if status == "delivered" else None
        self.add("outbox", (row_id, f"key-{row_id}", run, status, at, at, delivered), keep=keep)

    def finished_session(
        self,
        key: str,
        *,
        archived_at: float | None,
        at: float,
        keep: bool,
        requester: str | None,
        parent_run: str | None,
        transcripts: int = 8,
    ) -> str:
        """A sub-agent session with one finished run (ended at ``at``), its transcript, its delivered
        announcement and its status message; returns the run. Old hangers go by their own policies."""
        self.session(key, keep=keep, archived_at=archived_at, requester=requester)
        run = self.run(key, keep=keep, ended_at=at, parent=parent_run)
        rows_kept = keep and at > NOW - 30 * DAY
        self.transcript(key, run, at, keep=rows_kept, count=transcripts)
        self.outbox(run, at, keep=rows_kept)
        self.add("status_messages", (run,), keep=keep)
        return run

    def tree(self, name: str, *, archived_at: float, keep: bool, requester: str, parent_run: str) -> str:
        """A parent sub-agent session with two children that delegated to it, each child's completion consumed
        from the parent's inbox; an approval on the parent's run and a moderator's kill in the audit log."""
        at = archived_at
        parent = f"{name}:parent"
        parent_run_id = self.finished_session(
            parent, archived_at=at, at=at, keep=keep, requester=requester, parent_run=parent_run
        )
        self.add("approvals", (f"approval-{self.next_id()}", parent_run_id, at, at), keep=keep)
        self.add("audit_log", (self.next_id(), parent_run_id, at), keep=True)
        for child in ("a", "b"):
            child_run = self.finished_session(
                f"{name}:{child}", archived_at=at, at=at, keep=keep, requester=parent, parent_run=parent_run_id
            )
            self.add("run_inbox", (self.next_id(), parent_run_id, child_run, "consumed", at), keep=keep)
            self.add("delegate_tasks", (f"task-{self.next_id()}", child_run, parent, at, at), keep=keep)
        return parent


def busy(trees: int, history: int) -> Rows:
    """``trees`` old archived session trees (all due), ``history`` old turns of a live main session (each due,
    with its transcript and announcement), and one of each case that must survive."""
    rows = Rows()
    main = rows.session("main", keep=True, archived_at=None, depth=0)
    first_turn = rows.run(main, keep=True, ended_at=OLD)
    for _ in range(history):
        turn = rows.run(main, keep=False, ended_at=OLD)
        rows.transcript(main, turn, OLD, keep=False, count=4)
        rows.outbox(turn, OLD, keep=False)
    recent_turn = rows.run(main, keep=True, ended_at=RECENT)
    rows.transcript(main, recent_turn, RECENT, keep=True, count=4)
    live_turn = rows.run(main, keep=True, ended_at=None, status="running")  # live since long ago: its rows stay
    rows.transcript(main, live_turn, OLD, keep=True, count=2)
    rows.transcript(main, None, OLD, keep=False, count=3)  # context rows (no run) stand alone
    rows.transcript(main, None, RECENT, keep=True, count=2)
    rows.outbox(None, OLD, keep=True, status="pending")
    rows.outbox(None, OLD, keep=False, status="failed")
    rows.outbox(None, RECENT, keep=True, status="failed")
    for index in range(trees):
        rows.tree(f"old{index}", archived_at=OLD, keep=False, requester=main, parent_run=first_turn)
    rows.tree("recent", archived_at=RECENT, keep=True, requester=main, parent_run=first_turn)
    _survivors(rows, main, first_turn)
    return rows


def _survivors(rows: Rows, main: str, first_turn: str) -> None:
    """Old archived sessions something still holds on to: each stays (its own old rows go by their policies)."""

    def held(key: str) -> str:
        return rows.finished_session(key, archived_at=OLD, at=OLD, keep=True, requester=main, parent_run=first_turn)

    parent = "held:parent-of-recent"
    held(parent)
    rows.finished_session(  # spawned by a person in its thread: no run of it names the parent's
        "held:recent-child", archived_at=RECENT, at=RECENT, keep=True, requester=parent, parent_run=None
    )
    parent = "held:parent-of-live"
    parent_run = held(parent)
    rows.session("held:live-child", keep=True, archived_at=None, requester=parent, depth=2)
    child_run = rows.run("held:live-child", keep=True, ended_at=None, parent=parent_run, status="running")
    rows.transcript("held:live-child", child_run, OLD, keep=True)
    pending = held("held:pending-announcement")
    rows.outbox(pending, OLD, keep=True, status="pending")
    held("held:bound")
    rows.add("thread_bindings", (rows.next_id(), "held:bound", OLD, OLD, None), keep=True)
    rows.session("held:queued", keep=True, archived_at=OLD, requester=main)
    rows.run("held:queued", keep=True, ended_at=None, parent=first_turn, status="queued")
    followed = held("held:followed-up")  # another session's run names its run as parent
    rows.finished_session(
        "held:follower", archived_at=RECENT, at=RECENT, keep=True, requester=main, parent_run=followed
    )
    unread = held("held:unread-result")
    rows.add("run_inbox", (rows.next_id(), first_turn, unread, "pending", OLD), keep=True)
    ending = held("held:ends-a-binding")
    rows.add("thread_bindings", (rows.next_id(), main, OLD, OLD, ending), keep=True)
