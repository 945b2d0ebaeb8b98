"""Core tests' reads of the store, by name: runs, sessions, announcements, tasks, audit, usage.

A test asks for the rows it checks (``run_statuses(core, kind="spawn")``), not for SQL against the orchestrator's
private database. Each view reads one table (or one join) of the current schema in a stable order, oldest first, and
returns plain values or named tuples, so ``tuple(row)`` compares as the raw row did. A schema change is then mended
here, once, instead of in every test that looked.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from bot.core.orchestrator import Orchestrator
from tests import stores


async def _rows(core: Orchestrator, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in await core._db.fetch_all(sql, params)]


async def _value(core: Orchestrator, sql: str) -> Any:
    [(value,)] = await _rows(core, sql)
    return value


# ---- runs ------------------------------------------------------------------------------------------------------


async def run_statuses(core: Orchestrator, kind: str | None = None) -> list[str]:
    """Every run's status, oldest first; only runs of ``kind`` (``spawn``, ``chat``, …) if given."""
    if kind is None:
        return [status for (status,) in await _rows(core, "SELECT status FROM runs ORDER BY created_at")]
    rows = await _rows(core, "SELECT status FROM runs WHERE kind = ? ORDER BY created_at", (kind,))
    return [status for (status,) in rows]


async def run_kinds(core: Orchestrator) -> list[str]:
    """Every run's kind, oldest first."""
    return [kind for (kind,) in await _rows(core, "SELECT kind FROM runs ORDER BY created_at")]


async def run_count(core: Orchestrator) -> int:
    """How many runs the store holds, of every kind and status."""
    return int(await _value(core, "SELECT COUNT(*) FROM runs"))


class AgentRun(NamedTuple):
    agent_id: str
    status: str


async def agent_runs(core: Orchestrator) -> list[AgentRun]:
    """Each run's agent (its session's) and status, oldest first."""
    rows = await _rows(
        core, "SELECT s.agent_id, r.status FROM runs r JOIN sessions s ON s.key = r.session_key ORDER BY r.created_at"
    )
    return [AgentRun(*row) for row in rows]


class RequestedRun(NamedTuple):
    id: str
    task: str
    requester_user_id: int | None


async def run_requesters(core: Orchestrator) -> list[RequestedRun]:
    """Each run's id, task and the member it counts against, oldest first."""
    rows = await _rows(core, "SELECT id, task, requester_user_id FROM runs ORDER BY created_at")
    return [RequestedRun(*row) for row in rows]


async def queued_per_guild(core: Orchestrator) -> list[tuple[int | None, int]]:
    """How many runs are queued per server (``None``: direct messages), by server id."""
    return await _rows(
        core, "SELECT guild_id, COUNT(*) FROM runs WHERE status = 'queued' GROUP BY guild_id ORDER BY guild_id"
    )


async def spawn_footprint(core: Orchestrator) -> tuple[int, int]:
    """Non-chat runs and sessions in one snapshot: what a refused spawn must not grow."""
    [counts] = await _rows(
        core, "SELECT (SELECT COUNT(*) FROM runs WHERE kind != 'chat'), (SELECT COUNT(*) FROM sessions)"
    )
    return counts[0], counts[1]


class CronRun(NamedTuple):
    task: str
    status: str


async def cron_runs(core: Orchestrator) -> list[CronRun]:
    """The runs schedules started (their sessions' spawn site is ``cron``), oldest first."""
    rows = await _rows(
        core,
        "SELECT runs.task, runs.status FROM runs JOIN sessions ON sessions.key = runs.session_key "
        "WHERE sessions.spawn_site = 'cron' ORDER BY runs.created_at",
    )
    return [CronRun(*row) for row in rows]


async def inbox_count(core: Orchestrator) -> int:
    """How many messages wait in, or went through, runs' inboxes."""
    return int(await _value(core, "SELECT COUNT(*) FROM run_inbox"))


# ---- sessions --------------------------------------------------------------------------------------------------


async def session_count(core: Orchestrator, kind: str | None = None) -> int:
    """How many sessions the store holds; only those of ``kind`` (``subagent``, …) if given."""
    if kind is None:
        return int(await _value(core, "SELECT COUNT(*) FROM sessions"))
    [(count,)] = await _rows(core, "SELECT COUNT(*) FROM sessions WHERE kind = ?", (kind,))
    return int(count)


class SubagentPlace(NamedTuple):
    depth: int
    role: str


async def subagent_places(core: Orchestrator) -> list[SubagentPlace]:
    """Each sub-agent session's depth and role in the tree, oldest first."""
    rows = await _rows(core, "SELECT depth, role FROM sessions WHERE kind = 'subagent' ORDER BY created_at")
    return [SubagentPlace(*row) for row in rows]


async def spawned_agents(core: Orchestrator) -> list[str]:
    """The agent of each sub-agent session, oldest first."""
    rows = await _rows(core, "SELECT agent_id FROM sessions WHERE kind = 'subagent' ORDER BY created_at")
    return [agent for (agent,) in rows]


async def session_delegations(core: Orchestrator) -> list[str | None]:
    """How each session came to be (``subagent``, ``delegate``, …), oldest first."""
    return [delegation for (delegation,) in await _rows(core, "SELECT delegation FROM sessions ORDER BY created_at")]


# ---- announcements ---------------------------------------------------------------------------------------------


async def outbox_payloads(core: Orchestrator) -> list[dict[str, Any]]:
    """What each announcement in the outbox says, in the order they were written."""
    return [json.loads(payload) for (payload,) in await _rows(core, "SELECT payload_json FROM outbox ORDER BY id")]


class Announcement(NamedTuple):
    run_id: str
    channel_id: int
    status: str


async def announcements(core: Orchestrator) -> list[Announcement]:
    """Each announcement's run, channel and delivery status, in the order they were written."""
    rows = await _rows(core, "SELECT run_id, channel_id, status FROM outbox ORDER BY id")
    return [Announcement(*row) for row in rows]


# ---- schedules -------------------------------------------------------------------------------------------------


class ScheduleRow(NamedTuple):
    id: int
    cron: str
    prompt: str
    claimed_through: float


async def schedules(core: Orchestrator) -> list[ScheduleRow]:
    """Each stored schedule's id, cron, prompt and the last slot it claimed, by id."""
    rows = await _rows(core, "SELECT id, cron, prompt, claimed_through FROM schedules ORDER BY id")
    return [ScheduleRow(*row) for row in rows]


# ---- approvals, delegate tasks, audit ----------------------------------------------------------------------------


class ApprovalRow(NamedTuple):
    id: str
    run_id: str


async def approval_requests(core: Orchestrator, run_id: str | None = None) -> list[ApprovalRow]:
    """Each approval request and its run, oldest first; only ``run_id``'s if given."""
    if run_id is None:
        rows = await _rows(core, "SELECT id, run_id FROM approvals ORDER BY created_at")
    else:
        rows = await _rows(core, "SELECT id, run_id FROM approvals WHERE run_id = ? ORDER BY created_at", (run_id,))
    return [ApprovalRow(*row) for row in rows]


class DelegateTask(NamedTuple):
    task_id: str
    background: int
    status: str
    output: str | None
    error: str | None
    deadline: float
    finished_at: float | None


async def delegate_tasks(core: Orchestrator) -> list[DelegateTask]:
    """Each delegated task's state, oldest first."""
    rows = await _rows(
        core,
        "SELECT task_id, background, status, output, error, deadline, finished_at FROM delegate_tasks "
        "ORDER BY started_at",
    )
    return [DelegateTask(*row) for row in rows]


class AuditEntry(NamedTuple):
    guild_id: int | None
    actor_user_id: int
    target_user_id: int | None
    action: str
    run_id: str | None
    detail: str | None


async def audit_entries(core: Orchestrator) -> list[AuditEntry]:
    """The audit log, oldest first: who did what to whom, where."""
    rows = await _rows(
        core, "SELECT guild_id, actor_user_id, target_user_id, action, run_id, detail FROM audit_log ORDER BY id"
    )
    return [AuditEntry(*row) for row in rows]


async def dangling_references(core: Orchestrator) -> list[Any]:
    """Rows whose foreign keys point nowhere (none on PostgreSQL, which refuses them)."""
    return await stores.foreign_key_violations(core._db)


# ---- usage -----------------------------------------------------------------------------------------------------


class Usage(NamedTuple):
    runs: int
    requests: int
    input_tokens: int
    output_tokens: int
    cost_nanousd: int
    unpriced_requests: int


async def usage_days(core: Orchestrator, guild_id: int, user_id: int, agent_id: str) -> list[Usage]:
    """A member's usage of one agent on one server, a row a day."""
    rows = await _rows(
        core,
        "SELECT runs, requests, input_tokens, output_tokens, cost_nanousd, unpriced_requests FROM usage_daily "
        "WHERE guild_id = ? AND user_id = ? AND agent_id = ? ORDER BY day",
        (guild_id, user_id, agent_id),
    )
    return [Usage(*row) for row in rows]


async def usage_spent(core: Orchestrator) -> tuple[int | None, int | None]:
    """Cost (nano-dollars) and unpriced requests, summed over all usage."""
    [(cost, unpriced)] = await _rows(core, "SELECT SUM(cost_nanousd), SUM(unpriced_requests) FROM usage_daily")
    return cost, unpriced


async def runs_per_user(core: Orchestrator) -> list[tuple[int, int]]:
    """Runs each member started, summed over days, servers and agents, by user id."""
    return await _rows(core, "SELECT user_id, SUM(runs) FROM usage_daily GROUP BY user_id ORDER BY user_id")
