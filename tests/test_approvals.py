"""Approvals of ``always_ask`` tool calls, through the real core and runner (FunctionModel) and the real MCP test
server: the run pauses (``awaiting_approval``) without calling the tool; Approve runs it exactly once and the run goes
on; Deny and the deadline give the model a refusal and the tool never runs; the pause survives a restart; a
read-only agent's calls that act are refused in ZeroClaw's words."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

import storage.db as storage_db
import storage.runs as storage_runs
import storage.sessions as storage_sessions
from bot.agents.tool_gate import DENIED, TIMED_OUT
from bot.core.budgets.meter import Budgets
from bot.core.durable.executors import Executors
from bot.core.errors import UserError
from bot.core.runs.execution import Execution
from bot.core.runs.requests import ChatRequest
from bot.core.tools.approvals import Approvals, shown_arguments
from bot.records import Actor, ApprovalStatus, Run, RunStatus, Session
from bot.redaction import Redactor
from storage.bindings import BindingRepository
from storage.run_attachments import RunAttachmentRepository
from storage.run_files import RunFileRepository
from storage.runs import RunRepository
from tests import stores
from tests.core_support import ORIGIN, ScriptedModels, chat_and_wait, running_core, settle, text
from tests.db_views import approval_requests, audit_entries, dangling_references, delegate_tasks
from tests.test_mcp_tools import CONFIG, MCP, ToolUser, recorded

ASKING = (
    CONFIG.replace("[agents.list.main]\n", '[agents.list.main]\nrisk_profile = "careful"\n')
    + '[risk_profiles.careful]\nalways_ask = ["calc__shout"]\n'
)
OWNER = Actor(user_id=ORIGIN.user_id, is_moderator=False, guild_id=ORIGIN.guild_id)
HERE = (ORIGIN.channel_id,)  # where the requests are posted, and decided


async def paused_chat(core) -> str:
    """Start a chat whose model calls ``calc__shout``; wait until its run awaits approval."""
    run_id = await core.chat(ChatRequest(text="go", origin=ORIGIN))

    async def awaiting():
        return (await core.runs.get(run_id)).status is RunStatus.AWAITING_APPROVAL

    await settle(core, awaiting)
    return run_id


async def pending_of(core, run_id: str):
    return [await core.core.ctx.repos.approvals.get(row.id) for row in await approval_requests(core, run_id)]


async def finished(core, run_id: str):
    async def ended():
        return (await core.runs.get(run_id)).status.is_terminal

    await settle(core, ended)
    return await core.runs.get(run_id)


async def test_an_approved_call_runs_once_and_the_run_completes(tmp_path, calls):
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING) as core:
        run_id = await paused_chat(core)
        [approval] = await pending_of(core, run_id)
        assert (approval.tool_name, approval.arguments) == ("calc__shout", '{"text": "hi"}')
        assert recorded(calls) == []
        decided = await core.decide_approval(OWNER, approval.id, approve=True, where=HERE)
        assert str(decided) == f"Approved `calc__shout` for run {run_id[:8]}."
        run = await finished(core, run_id)
    assert run.status is RunStatus.COMPLETED
    assert user.results == ["YO HI"]
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "hi"}}]


async def test_a_denied_call_never_runs_and_the_model_reads_the_refusal(tmp_path, calls):
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING) as core:
        run_id = await paused_chat(core)
        [approval] = await pending_of(core, run_id)
        await core.decide_approval(OWNER, approval.id, approve=False, where=HERE)
        run = await finished(core, run_id)
        [decided] = await pending_of(core, run_id)
    assert run.status is RunStatus.COMPLETED
    assert user.results == [DENIED]
    assert recorded(calls) == []
    assert (decided.status, decided.decided_by) == (ApprovalStatus.DENIED, OWNER.user_id)


async def test_nobody_deciding_in_time_denies(tmp_path, calls):
    config = ASKING.replace('model = "test/main"\n', 'model = "test/main"\napproval_timeout_minutes = 0.005\n')
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), config) as core:
        run_id = await paused_chat(core)
        run = await finished(core, run_id)
        [decided] = await pending_of(core, run_id)
    assert run.status is RunStatus.COMPLETED
    assert user.results == [TIMED_OUT]
    assert recorded(calls) == []
    assert decided.status is ApprovalStatus.TIMED_OUT


async def test_a_restart_keeps_the_run_paused_and_approve_then_works(tmp_path, calls):
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING) as core:
        run_id = await paused_chat(core)
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING) as core:
        assert (await core.runs.get(run_id)).status is RunStatus.AWAITING_APPROVAL
        [approval] = await pending_of(core, run_id)
        await core.decide_approval(OWNER, approval.id, approve=True, where=HERE)
        run = await finished(core, run_id)
    assert run.status is RunStatus.COMPLETED
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "hi"}}]


async def test_only_the_owner_or_a_moderator_decides_and_a_moderator_is_audited(tmp_path, calls):
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING) as core:
        run_id = await paused_chat(core)
        [approval] = await pending_of(core, run_id)
        with pytest.raises(UserError, match=r"You can only approve tool calls of runs you started; .* <@7>"):
            await core.decide_approval(Actor(user_id=99, is_moderator=False, guild_id=1), approval.id, True, where=HERE)
        with pytest.raises(UserError, match="You can only approve"):  # a moderator of another server
            await core.decide_approval(Actor(user_id=42, is_moderator=True, guild_id=2), approval.id, True, where=HERE)
        with pytest.raises(UserError, match="only be decided in the channel where it was posted"):
            await core.decide_approval(OWNER, approval.id, True, where=(ORIGIN.channel_id + 1,))
        assert (await core.core.ctx.repos.approvals.get(approval.id)).status is ApprovalStatus.PENDING
        await core.decide_approval(Actor(user_id=42, is_moderator=True, guild_id=1), approval.id, True, where=HERE)
        await finished(core, run_id)
        audit = await audit_entries(core)
    assert [(row.actor_user_id, row.target_user_id, row.action, row.run_id) for row in audit] == [
        (42, 7, "approve", run_id)
    ]
    assert [row.guild_id for row in audit] == [ORIGIN.guild_id]


async def test_killing_a_paused_run_settles_it_killed_and_cancels_its_call(tmp_path, calls):
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING) as core:
        run_id = await paused_chat(core)
        await core.core.commands.kill(run_id)
        [approval] = await pending_of(core, run_id)
        assert (await core.runs.get(run_id)).status is RunStatus.KILLED
        with pytest.raises(UserError, match="already cancelled"):
            await core.decide_approval(OWNER, approval.id, approve=True, where=HERE)
    assert recorded(calls) == []


async def test_a_read_only_agent_may_read_but_not_act(tmp_path, calls):
    config = CONFIG.replace("[agents.list.main]\n", '[agents.list.main]\nrisk_profile = "ro"\n') + (
        '[risk_profiles.ro]\nlevel = "readonly"\n'
    )
    user = ToolUser(
        ("calc__add", {"a": 1, "b": 2}),
        ("calc__shout", {"text": "hi"}),
        ("subagents", {"action": "list"}),
        ("sessions_spawn", {"task": "x"}),
    )
    async with running_core(tmp_path, ScriptedModels(main=user), config) as core:
        await core.chat(ChatRequest(text="go", origin=ORIGIN))
        await core.core.dispatch.wait_idle()
    assert user.results[0] == "3"
    assert user.results[1] == "Security policy: read-only mode, cannot perform 'calc__shout'"
    assert "read-only" not in user.results[2]
    assert user.results[3] == "Security policy: read-only mode, cannot perform 'sessions_spawn'"
    assert recorded(calls) == [{"tool": "add", "arguments": {"a": 1, "b": 2}}]


def delegating_config(timeout: int | None = None) -> str:
    """main delegates (bounded) to an agentic researcher whose calc__shout needs approval."""
    limit = f"agentic_timeout_secs = {timeout}\n" if timeout else ""
    return MCP + (
        '[risk_profiles.team]\ndelegation_policy = { mode = "allow" }\nalways_ask = ["calc__shout"]\n'
        f"[runtime_profiles.agentic]\nagentic = true\n{limit}"
        '[agents.list.main]\nrisk_profile = "team"\nmcp_servers = ["calc"]\ndelegates = ["researcher"]\n'
        '[agents.list.researcher]\nmodel = "test/researcher"\nrisk_profile = "team"\nruntime_profile = "agentic"\n'
        'mcp_servers = ["calc"]\n'
    )


def delegating_models(researcher: ToolUser) -> ScriptedModels:
    return ScriptedModels(
        main=ToolUser(("delegate", {"agent": "researcher", "prompt": "shout hi"})), researcher=researcher
    )


async def paused_delegation(core) -> tuple[str, str, str]:
    """A chat turn whose delegate pauses on its call: the turn's run id, the approval's id, the delegate's run id."""
    run_id = await core.chat(ChatRequest(text="go", origin=ORIGIN))

    async def asked():
        return await approval_requests(core)

    await settle(core, asked)
    [(approval_id, child_run_id)] = await asked()
    return run_id, approval_id, child_run_id


async def test_a_bounded_delegates_call_is_approved_the_same_way(tmp_path, calls):
    researcher = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, delegating_models(researcher), delegating_config()) as core:
        run_id, approval_id, child_run_id = await paused_delegation(core)
        assert (await core.runs.get(child_run_id)).status is RunStatus.AWAITING_APPROVAL
        assert recorded(calls) == []
        await core.decide_approval(OWNER, approval_id, approve=True, where=HERE)
        run = await finished(core, run_id)
    assert run.status is RunStatus.COMPLETED
    assert researcher.results == ["YO HI"]
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "hi"}}]


async def test_a_bounded_delegate_paused_for_approval_outlives_its_delegation_deadline(tmp_path, calls, monkeypatch):
    """The delegation's time limit does not run out on a person deciding: the approval's own deadline bounds it."""
    monkeypatch.setattr("bot.core.tools.delegation.DEADLINE_GRACE", 0.0)
    researcher = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, delegating_models(researcher), delegating_config(timeout=1)) as core:
        run_id, approval_id, child_run_id = await paused_delegation(core)
        [(task_id, deadline)] = [(task.task_id, task.deadline) for task in await delegate_tasks(core)]

        async def looked_again():  # the deadline passed and the reaper put it off instead of stopping the run
            job = core.core.ctx.timers._scheduler.get_job(f"delegate-deadline:{task_id}")
            return job is not None and job.next_run_time.timestamp() > deadline

        await settle(core, looked_again)
        assert (await core.runs.get(child_run_id)).status is RunStatus.AWAITING_APPROVAL
        assert [task.status for task in await delegate_tasks(core)] == ["running"]
        await core.decide_approval(OWNER, approval_id, approve=True, where=HERE)
        run = await finished(core, run_id)
        [task] = await delegate_tasks(core)
    assert (run.status, task.status) == (RunStatus.COMPLETED, "completed")
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "hi"}}]


@pytest.mark.parametrize("durable", [False, True], ids=["in-process lane", "DBOS queue"])
async def test_a_message_sent_while_the_main_agent_waits_is_answered_after_the_paused_turn(tmp_path, calls, durable):
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING, durable=durable) as core:
        paused_id = await paused_chat(core)
        later_id = await core.chat(ChatRequest(text="and then?", origin=ORIGIN))
        [approval] = await pending_of(core, paused_id)
        await core.decide_approval(OWNER, approval.id, approve=True, where=HERE)
        later = await finished(core, later_id)
        paused = await core.runs.get(paused_id)
    assert (paused.status, later.status) == (RunStatus.COMPLETED, RunStatus.COMPLETED)
    assert paused.ended_at <= later.started_at
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "hi"}}]


async def test_a_decision_on_a_run_that_ended_another_way_is_refused(tmp_path, calls):
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING) as core:
        run_id = await paused_chat(core)
        # as when a delegate's caller ends its turn: not through /subagents kill
        await core.core.settlement.kill(run_id)
        [approval] = await pending_of(core, run_id)
        with pytest.raises(UserError, match=f"Run {run_id[:8]} is already finished."):
            await core.decide_approval(OWNER, approval.id, approve=True, where=HERE)
        [cancelled] = await pending_of(core, run_id)
    assert cancelled.status is ApprovalStatus.CANCELLED
    assert recorded(calls) == []


@pytest.mark.sqlite_only("upgrades through SQLite's migrations 0001-0009; PostgreSQL's start at the 0013 baseline")
async def test_upgrading_a_database_keeps_its_runs_and_their_references(tmp_path, calls, monkeypatch):
    """Migration 0010 rebuilds ``runs`` (a CHECK constraint cannot change in place) under foreign keys."""
    before, from_row, NONE = storage_db.migrations, storage_runs._from_row, {"lane_place": None}
    with monkeypatch.context() as old_bot:  # it had no approvals table, and no budget tables
        old_bot.setattr(storage_db, "migrations", lambda folder: [m for m in before(folder) if m[0] < 10])
        old_bot.setattr(Approvals, "start", lambda self: asyncio.sleep(0))
        old_bot.setattr(Budgets, "admit", lambda self, tx, run: asyncio.sleep(0))
        old_bot.setattr(Budgets, "record", lambda self, tx, run, session, messages: asyncio.sleep(0, False))
        old_bot.setattr(Budgets, "meter", lambda self, run: lambda: asyncio.sleep(0))
        old_bot.setattr(RunRepository, "own", lambda self, tx, run_id: asyncio.sleep(0))  # nor executors (0014)
        old_bot.setattr(RunRepository, "insert", _unowned_insert)
        old_bot.setattr(RunRepository, "mark_running", _unowned_mark_running)
        old_bot.setattr(Executors, "start", lambda self, launch: launch())
        old_bot.setattr(Executors, "close", lambda self: asyncio.sleep(0))
        old_bot.setattr(BindingRepository, "next_deadline", lambda self: asyncio.sleep(0))  # nor deadline_at (0017)
        old_bot.setattr(storage_sessions, "_COLUMNS", storage_sessions._COLUMNS.removesuffix(", acp_agent"))  # (0021)
        old_bot.setattr(RunAttachmentRepository, "of_run", lambda self, run_id: asyncio.sleep(0, []))  # (0023)
        old_bot.setattr(RunFileRepository, "of_run", lambda self, tx, run_id: asyncio.sleep(0, []))  # nor files (0022)
        old_bot.setattr(storage_runs, "_COLUMNS", storage_runs._COLUMNS.removesuffix(", lane_place"))  # (0027)
        old_bot.setattr(storage_runs, "_from_row", lambda row: from_row(dict(zip(row.keys(), row, strict=True)) | NONE))
        old_bot.setattr(storage_runs, "PLACE_BACK", "")
        old_bot.setattr(storage_runs, "LINE_LEFT", "")
        async with running_core(tmp_path, ScriptedModels(main=text("hello")), CONFIG) as core:
            old_id = await chat_and_wait(core)
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING) as core:
        old = await core.runs.get(old_id)
        assert (old.status, old.result_text) == (RunStatus.COMPLETED, "hello")
        assert len(await core.transcripts.for_run(old_id)) == 2
        await paused_chat(core)
        assert await dangling_references(core) == []


async def _unowned_insert(self, tx, run: Run) -> None:
    """A run stored by a bot from before executors (0014): no process owned it."""
    await tx.execute(
        "INSERT INTO runs (id, session_key, parent_run_id, kind, status, task, model, thinking, timeout_seconds, "
        "requester_user_id, guild_id, channel_id, source_message_id, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run.id, run.session_key, run.parent_run_id, run.kind.value, run.status.value, run.task, run.model,
         run.thinking, run.timeout_seconds, run.requester_user_id, run.guild_id, run.channel_id,
         run.source_message_id, run.created_at),
    )  # fmt: skip


async def _unowned_mark_running(self, tx, run_id: str, started_at: float) -> bool:
    sql = "UPDATE runs SET status = 'running', started_at = ? WHERE id = ? AND status = 'queued'"
    return await tx.execute(sql, (started_at, run_id)) == 1


def test_a_request_shows_no_secret_and_every_other_character_visibly():
    arguments = {"token": "sk-live-123456", "text": " " * 500 + "x\u202e\u200b\t\U000e0041é", "short": "short"}
    shown = shown_arguments(arguments, Redactor(["sk-live-123456", "short"]))
    assert shown == (
        '{"token": "[REDACTED]", "text": "' + " " * 500 + 'x\\u202e\\u200b\\t\\udb40\\udc41é", "short": "short"}'
    )
    assert json.loads(shown.replace("[REDACTED]", "sk-live-123456")) == arguments  # the same arguments, as JSON


async def test_a_deadline_that_passed_while_the_bot_was_down_denies_at_start_up(tmp_path, calls):
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING) as core:
        run_id = await paused_chat(core)
    stores.query(tmp_path / "core.sqlite3", "UPDATE approvals SET deadline = 0")  # the bot stayed down past it
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING) as core:
        run = await finished(core, run_id)
        [decided] = await pending_of(core, run_id)
    assert (run.status, decided.status) == (RunStatus.COMPLETED, ApprovalStatus.TIMED_OUT)
    assert user.results == [TIMED_OUT]
    assert recorded(calls) == []


async def test_a_pause_replayed_after_its_decision_leaves_the_run_to_its_wake(tmp_path, calls, monkeypatch):
    """The process stopped after the pause was committed but before DBOS recorded that its workflow ended: the next
    start replays that workflow, and the owner may approve before the replay reaches the pause. The replayed pause
    asks nothing again (the run is the wake's now), and the approved call runs once."""
    user = ToolUser(("calc__shout", {"text": "hi"}))
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING, durable=True) as core:
        run_id = await paused_chat(core)
    journal = sqlite3.connect(tmp_path / "core.sqlite3.dbos")
    with journal:
        journal.execute("UPDATE workflow_status SET status = 'PENDING' WHERE workflow_uuid = ?", (run_id,))
    journal.close()

    decided, replaying = asyncio.Event(), asyncio.Event()
    execute = Execution.execute

    async def after_the_decision(self, run: Run, session: Session, wake: bool, durable: bool) -> None:
        if run.id == run_id and not wake:  # the replay of the pause's workflow
            replaying.set()
            await decided.wait()
        await execute(self, run, session, wake, durable)

    monkeypatch.setattr(Execution, "execute", after_the_decision)
    async with running_core(tmp_path, ScriptedModels(main=user), ASKING, durable=True) as core:
        await asyncio.wait_for(replaying.wait(), 10)
        [approval] = await pending_of(core, run_id)
        await core.decide_approval(OWNER, approval.id, approve=True, where=HERE)
        decided.set()
        run = await finished(core, run_id)
        await core.core.dispatch.wait_idle()
        approvals = await pending_of(core, run_id)
    assert (run.status, run.result_text) == (RunStatus.COMPLETED, "done")
    assert [(a.id, a.status) for a in approvals] == [(approval.id, ApprovalStatus.APPROVED)]
    assert user.results == ["YO HI"]
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "hi"}}]
