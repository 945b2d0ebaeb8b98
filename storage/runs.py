"""Runs repository: creation, state transitions, and the queries the orchestrator's rules are made of."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from bot.records import LIVE_STATUSES, Run, RunKind, RunStatus, Usage
from storage.db import Connection, Database, Row

_COLUMNS = (
    "id, session_key, parent_run_id, kind, status, task, model, thinking, timeout_seconds, requester_user_id, "
    "guild_id, channel_id, source_message_id, created_at, started_at, ended_at, error, result_text, "
    "input_tokens, output_tokens, requests, tool_calls, cost, served_model, lane_place"
)
PLACE_BACK = ", lane_place = NULL"  # a run that stops running gives its lane place back (storage/lane_places.py)
LINE_LEFT = ", lane_priority = NULL"  # and an ended one leaves the line
LIVE_SQL = "('" + "', '".join(sorted(status.value for status in LIVE_STATUSES)) + "')"  # for `status IN ...`


@dataclass(frozen=True)
class QueueLoad:
    """Runs waiting for the sub-agent lane: all servers' (``total``) and one server's (``guild_id``; ``None``: DMs)."""

    total: int
    server: int
    guild_id: int | None


def in_server(column: str, guild_id: int | None) -> tuple[str, tuple[int, ...]]:
    """Runs of one server (``None``: of DMs), as a condition both dialects answer from an index on ``column``."""
    return (f"{column} = ?", (guild_id,)) if guild_id is not None else (f"{column} IS NULL", ())


def _from_row(row: Row) -> Run:
    return Run(
        id=row["id"],
        session_key=row["session_key"],
        parent_run_id=row["parent_run_id"],
        kind=RunKind(row["kind"]),
        status=RunStatus(row["status"]),
        task=row["task"],
        model=row["model"],
        thinking=row["thinking"],
        timeout_seconds=row["timeout_seconds"],
        requester_user_id=row["requester_user_id"],
        guild_id=row["guild_id"],
        channel_id=row["channel_id"],
        source_message_id=row["source_message_id"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        error=row["error"],
        result_text=row["result_text"],
        usage=Usage(
            input_tokens=row["input_tokens"],
            output_tokens=row["output_tokens"],
            requests=row["requests"],
            tool_calls=row["tool_calls"],
            cost=Decimal(row["cost"]) if row["cost"] is not None else None,
        ),
        served_model=row["served_model"],
        lane_place=row["lane_place"],
    )


class RunRepository:
    def __init__(self, db: Database, executor_id: str | None = None) -> None:
        """``executor_id``: the process that admits runs through this repository owns them (see ``own``)."""
        self._db = db
        self._executor_id = executor_id

    async def insert(self, tx: Connection, run: Run) -> None:
        await tx.execute(
            "INSERT INTO runs (id, session_key, parent_run_id, kind, status, task, model, thinking, timeout_seconds, "
            "requester_user_id, guild_id, channel_id, source_message_id, created_at, executor_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run.id,
                run.session_key,
                run.parent_run_id,
                run.kind.value,
                run.status.value,
                run.task,
                run.model,
                run.thinking,
                run.timeout_seconds,
                run.requester_user_id,
                run.guild_id,
                run.channel_id,
                run.source_message_id,
                run.created_at,
                self._executor_id,  # the process that admits a run owns it until another executes it
            ),
        )

    async def own(self, tx: Connection, run_id: str) -> None:
        """This process executes the run now: it is this process's to resume or settle if the process dies."""
        await tx.execute("UPDATE runs SET executor_id = ? WHERE id = ?", (self._executor_id, run_id))

    async def owner(self, run_id: str) -> str | None:
        row = await self._db.fetch_one("SELECT executor_id FROM runs WHERE id = ?", (run_id,))
        return row[0] if row else None

    async def get(self, run_id: str, tx: Connection | None = None) -> Run | None:
        sql, params = f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (run_id,)
        row = await (tx or self._db).fetch_one(sql, params)
        return _from_row(row) if row else None

    async def mark_running(self, tx: Connection, run_id: str, started_at: float) -> bool:
        """queued → running, owned by this process; False if the run was settled meanwhile (e.g. killed while it
        waited for the lane)."""
        changed = await tx.execute(
            "UPDATE runs SET status = 'running', started_at = ?, executor_id = ? WHERE id = ? AND status = 'queued'",
            (started_at, self._executor_id, run_id),
        )
        return changed == 1

    async def set_status(
        self,
        tx: Connection,
        run_id: str,
        expected: RunStatus,
        status: RunStatus,
        *,
        result_text: str | None = None,
    ) -> bool:
        """A guarded live-state change (running ⇄ waiting); False if the run was not in ``expected``.

        A run that stops running gives its lane place back in the same statement."""
        place = "" if status is RunStatus.RUNNING else PLACE_BACK
        changed = await tx.execute(
            f"UPDATE runs SET status = ?, result_text = COALESCE(?, result_text){place} WHERE id = ? AND status = ?",
            (status.value, result_text, run_id, expected.value),
        )
        return changed == 1

    async def finish(
        self,
        tx: Connection,
        run_id: str,
        status: RunStatus,
        ended_at: float,
        *,
        result_text: str | None = None,
        error: str | None = None,
    ) -> bool:
        """Move a live run to a terminal state; False if it was already terminal (so nothing is announced twice).
        Its usage is left as recorded: what a run spent stays counted however it ends; its lane place is given back."""
        changed = await tx.execute(
            f"UPDATE runs SET status = ?, ended_at = ?, result_text = COALESCE(?, result_text), error = ?{PLACE_BACK}"
            f"{LINE_LEFT} WHERE id = ? AND status IN {LIVE_SQL}",
            (status.value, ended_at, result_text, error, run_id),
        )
        return changed == 1

    async def record_usage(self, tx: Connection, run_id: str, usage: Usage) -> None:
        """The run's usage so far, over all its turns.

        Written as it is spent, at every step."""
        await tx.execute(
            "UPDATE runs SET input_tokens = ?, output_tokens = ?, requests = ?, tool_calls = ?, cost = ? WHERE id = ?",
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.requests,
                usage.tool_calls,
                str(usage.cost) if usage.cost is not None else None,
                run_id,
            ),
        )

    async def record_served_model(self, tx: Connection, run_id: str, reference: str) -> None:
        """The configured model that gave the run's latest answer."""
        await tx.execute("UPDATE runs SET served_model = ? WHERE id = ?", (reference, run_id))

    async def is_live(self, tx: Connection, run_id: str) -> bool:
        return await tx.fetch_one(f"SELECT 1 FROM runs WHERE id = ? AND status IN {LIVE_SQL}", (run_id,)) is not None

    async def list_live(self) -> list[Run]:
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM runs WHERE status IN {LIVE_SQL} ORDER BY created_at")
        return [_from_row(row) for row in rows]

    async def live_owned_by(self, executor_id: str, *, or_nobody: bool) -> list[Run]:
        """Live runs the process ``executor_id`` owns (and, ``or_nobody``, those no process owns), oldest first."""
        nobody = " OR executor_id IS NULL" if or_nobody else ""
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM runs WHERE status IN {LIVE_SQL} AND (executor_id = ?{nobody}) ORDER BY created_at",
            (executor_id,),
        )
        return [_from_row(row) for row in rows]

    async def count_unsettled_children(self, run_id: str, tx: Connection | None = None) -> int:
        """How many children this run spawned are still unsettled.

        Unsettled: queued, running, or waiting on their own children."""
        sql, params = f"SELECT COUNT(*) FROM runs WHERE parent_run_id = ? AND status IN {LIVE_SQL}", (run_id,)
        row = await (tx or self._db).fetch_one(sql, params)
        assert row is not None, "COUNT(*) always returns one row"
        return row[0]

    async def root_of(self, run_id: str) -> str:
        """The top-level run ``run_id`` descends from through ``parent_run_id`` (a top-level run is its own)."""
        row = await self._db.fetch_one(
            "WITH RECURSIVE up(id, parent) AS (SELECT id, parent_run_id FROM runs WHERE id = ? "
            "UNION ALL SELECT runs.id, runs.parent_run_id FROM runs JOIN up ON runs.id = up.parent) "
            "SELECT id FROM up WHERE parent IS NULL",
            (run_id,),
        )
        return row[0] if row else run_id

    async def lane_queued(self, guild_id: int | None) -> QueueLoad:
        """Runs queued for the sub-agent lane, all servers' and ``guild_id``'s (``None``: DMs'): every run but a
        main-agent turn, except a delegated child's (it runs inside its caller's turn)."""
        server, params = in_server("runs.guild_id", guild_id)
        live = f"runs.status IN {LIVE_SQL}"  # the condition of the index on live runs, so SQLite uses it
        row = await self._db.fetch_one(
            f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {server} THEN 1 ELSE 0 END), 0) FROM runs JOIN sessions "
            f"ON sessions.key = runs.session_key WHERE {live} AND runs.status = 'queued' AND runs.kind != 'chat' "
            "AND sessions.delegation IS NULL",
            params,
        )
        return QueueLoad(total=row[0] if row else 0, server=row[1] if row else 0, guild_id=guild_id)

    async def count_before(self, session_key: str, created_at: float) -> int:
        """The session's runs created before ``created_at``: a turn's number in its session, less one."""
        row = await self._db.fetch_one(
            "SELECT COUNT(*) FROM runs WHERE session_key = ? AND created_at < ?", (session_key, created_at)
        )
        return row[0] if row else 0

    async def count_active_children(self, session_key: str) -> int:
        """Child sessions an agent spawned under ``session_key`` whose latest run is live.

        What the children cap counts. ``spawn_subagent`` children do not count: their caller is waiting for them,
        bounded by its budget."""
        row = await self._db.fetch_one(
            "SELECT COUNT(*) FROM sessions s JOIN runs r ON r.session_key = s.key "
            "WHERE s.requester_session_key = ? AND s.delegation IS NULL AND r.created_at = "
            "(SELECT MAX(created_at) FROM runs WHERE session_key = s.key) "
            f"AND r.status IN {LIVE_SQL} AND EXISTS (SELECT 1 FROM runs spawn WHERE spawn.session_key = s.key "
            "AND spawn.kind = 'spawn' AND spawn.parent_run_id IS NOT NULL)",
            (session_key,),
        )
        return row[0] if row else 0

    async def count_member_active(self, guild_id: int | None, member_id: int) -> int:
        """Sub-agents of the server's conversations (``guild_id`` ``None``: of DMs) whose latest run is live and
        runs for ``member_id``, however started (the member cap). ``spawn_subagent`` children do not count."""
        server, params = in_server("r.guild_id", guild_id)
        row = await self._db.fetch_one(
            "SELECT COUNT(*) FROM runs r JOIN sessions s ON s.key = r.session_key "
            "JOIN sessions conversation ON conversation.key = s.requester_session_key "
            f"WHERE {server} AND r.requester_user_id = ? AND r.status IN {LIVE_SQL} AND s.delegation IS NULL "
            "AND conversation.kind = 'main' AND conversation.requester_session_key IS NULL "
            "AND r.created_at = (SELECT MAX(created_at) FROM runs WHERE session_key = s.key)",
            (*params, member_id),
        )
        return row[0] if row else 0

    async def sessions_with_run_prefix(self, requester_key: str, prefix: str) -> list[str]:
        """Sessions below ``requester_key`` with a run whose id starts with ``prefix``.

        Below: its children, theirs, and so on. A run id reaches any sub-agent of a conversation, however it was
        started."""
        rows = await self._db.fetch_all(
            "WITH RECURSIVE tree(key) AS (SELECT key FROM sessions WHERE requester_session_key = ? "
            "UNION SELECT sessions.key FROM sessions JOIN tree ON sessions.requester_session_key = tree.key) "
            "SELECT DISTINCT r.session_key FROM runs r JOIN tree ON tree.key = r.session_key "
            "WHERE substr(r.id, 1, ?) = ?",
            (requester_key, len(prefix), prefix),
        )
        return [row[0] for row in rows]

    async def running_in(self, tx: Connection, session_key: str) -> Run | None:
        """The session's run in progress, if any.

        A main session runs one turn at a time."""
        row = await tx.fetch_one(
            f"SELECT {_COLUMNS} FROM runs WHERE session_key = ? AND status = 'running' ORDER BY created_at LIMIT 1",
            (session_key,),
        )
        return _from_row(row) if row else None

    async def queued_voice_turn(
        self, tx: Connection, session_key: str, channel_id: int, user_id: int | None
    ) -> str | None:
        """A main session's queued voice turn for ``user_id`` in ``channel_id``, if any.

        Such a turn tells what sub-agents found and answers no message; completions that arrive before it starts
        join it."""
        person = "requester_user_id IS NULL" if user_id is None else "requester_user_id = ?"
        row = await tx.fetch_one(
            "SELECT id FROM runs WHERE session_key = ? AND kind = 'chat' AND source_message_id IS NULL "
            f"AND status = 'queued' AND channel_id = ? AND {person} ORDER BY created_at DESC LIMIT 1",
            (session_key, channel_id) + (() if user_id is None else (user_id,)),
        )
        return row[0] if row else None

    async def live_delegated_children(self, tx: Connection, run_id: str) -> list[Run]:
        """Live blocking delegated children of ``run_id`` (``spawn_subagent``, synchronous ``delegate``: their
        caller's tool call waits for them); background delegate tasks are not among them."""
        columns = ", ".join("runs." + column.strip() for column in _COLUMNS.split(","))
        rows = await tx.fetch_all(
            f"SELECT {columns} FROM runs JOIN sessions ON sessions.key = runs.session_key "
            f"WHERE runs.parent_run_id = ? AND runs.status IN {LIVE_SQL} AND sessions.delegation IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM delegate_tasks WHERE delegate_tasks.run_id = runs.id "
            "AND delegate_tasks.background = 1)",
            (run_id,),
        )
        return [_from_row(row) for row in rows]

    async def live_subtree(self, run_id: str) -> list[Run]:
        """Live runs descending from ``run_id`` (itself included), deepest first: the order a cascade stops them."""
        rows = await self._db.fetch_all(
            "WITH RECURSIVE tree(id, level) AS (SELECT id, 0 FROM runs WHERE id = ? "
            "UNION ALL SELECT runs.id, tree.level + 1 FROM runs JOIN tree ON runs.parent_run_id = tree.id) "
            f"SELECT {', '.join('runs.' + c.strip() for c in _COLUMNS.split(','))} FROM runs JOIN tree USING (id) "
            f"WHERE runs.status IN {LIVE_SQL} ORDER BY tree.level DESC",
            (run_id,),
        )
        return [_from_row(row) for row in rows]

    async def live_before(self, session_key: str, created_at: float) -> list[RunStatus]:
        """The statuses of a session's live runs created before ``created_at``.

        They are the turns ahead of a queued one."""
        rows = await self._db.fetch_all(
            f"SELECT status FROM runs WHERE session_key = ? AND created_at < ? AND status IN {LIVE_SQL}",
            (session_key, created_at),
        )
        return [RunStatus(row[0]) for row in rows]

    async def for_session(self, session_key: str) -> list[Run]:
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM runs WHERE session_key = ? ORDER BY created_at", (session_key,)
        )
        return [_from_row(row) for row in rows]

    async def latest_for_session(self, session_key: str) -> Run | None:
        row = await self._db.fetch_one(
            f"SELECT {_COLUMNS} FROM runs WHERE session_key = ? ORDER BY created_at DESC LIMIT 1", (session_key,)
        )
        return _from_row(row) if row else None
