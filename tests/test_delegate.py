"""``delegate`` through the real core and runner (FunctionModel): a configured agent hands a prompt to another one,
synchronously, in the background (a durable task record) or in parallel, and every refusal uses ZeroClaw's words
(reference/zeroclaw.md §2). The channel sees only the asking agent's answer."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.usage import RequestUsage

from bot.core.errors import CallerEnded
from bot.core.runs.requests import ChatRequest
from bot.core.tools.action_budget import BUDGET_EXHAUSTED
from bot.core.tools.delegate_records import RECONCILED_NOTE
from bot.records import Delegation, RunStatus, SpawnSite
from storage.db import Database
from tests import stores
from tests.core_support import (
    ORIGIN,
    ScriptedModels,
    chat_and_wait,
    decoded,
    first_prompt,
    running_core,
    settle,
    tool_returns,
)
from tests.db_views import agent_runs, delegate_tasks, outbox_payloads, session_delegations, usage_days

MAIN_KEY = "agent:main:discord:channel:100"
CONFIG = """
[agents.defaults]
model = "test/main"
[risk_profiles.team]
delegation_policy = { mode = "allow" }
[risk_profiles.other]
delegation_policy = { mode = "allow" }
[risk_profiles.asker]
always_ask = ["sessions_spawn", " "]
[agents.list.main]
risk_profile = "team"
delegates = [{ agent = "solo", mode = "independent" }, { agent = "careful", mode = "independent" }]
[agents.list.researcher]
model = "test/researcher"
risk_profile = "team"
[agents.list.writer]
model = "test/writer"
risk_profile = "team"
[agents.list.solo]
model = "test/solo"
risk_profile = "other"
[agents.list.careful]
model = "test/solo"
risk_profile = "asker"
[agents.list.stranger]
model = "test/solo"
risk_profile = "other"
[agents.list.off]
model = "test/solo"
risk_profile = "team"
enabled = false
"""
UNREACHABLE_STRANGER = (
    'delegate target "stranger" is not reachable from "main": different risk profile (caller uses "team", target '
    'uses "other"). delegate_same_risk_profile only reaches agents with the same risk profile; add an explicit '
    "[agents.main].delegates entry with the intended mode, or change one agent's risk_profile."
)
ALWAYS_ASK = (
    'delegate target "careful" cannot run in independent mode from "main": risk profile "asker" has always_ask '
    'entries (sessions_spawn). See ZeroClaw docs, "Delegation & SubAgents" > "What\'s not supported".'
)
ALL_AGENTS = "main, researcher, writer, solo, careful, stranger, off"


class Target:
    """A delegate target that answers ``<name> says: <prompt>`` (or ``reply``), recording what it saw."""

    def __init__(self, name: str, reply: str | None = None) -> None:
        self.name, self.reply = name, reply
        self.prompts: list[str] = []
        self.tools: list[list[str]] = []
        self.system: list[str] = []

    def __call__(self, messages: list[ModelMessage], info) -> ModelResponse:
        self.prompts.append(first_prompt(messages))
        self.tools.append(sorted(t.name for t in info.function_tools))
        self.system.append(info.instructions or "")
        reply = self.reply if self.reply is not None else f"{self.name} says: {first_prompt(messages)}"
        return ModelResponse(parts=[TextPart(reply)])


Step = Callable[[list[dict]], tuple[str, dict]]


class Caller:
    """The main agent: each step makes one tool call from the results so far; then it answers ``done``."""

    def __init__(self, *steps: Step | tuple[str, dict]) -> None:
        self.steps = list(steps)
        self.results: list[dict] = []
        self.tools: list[str] = []
        self.agent_description = ""

    def __call__(self, messages: list[ModelMessage], info) -> ModelResponse:
        self.tools = sorted(t.name for t in info.function_tools)
        for tool in info.function_tools:
            if tool.name == "delegate":
                self.agent_description = tool.parameters_json_schema["properties"]["agent"]["description"]
        self.results += [decoded(part.model_response_str()) for part in tool_returns(messages)]
        if len(self.results) < len(self.steps):
            step = self.steps[len(self.results)]
            name, args = step(self.results) if callable(step) else step
            return ModelResponse(parts=[ToolCallPart(name, args)])
        return ModelResponse(parts=[TextPart("done")])


def delegate(**args) -> tuple[str, dict]:
    return ("delegate", args)


def ok(output: str) -> dict:
    return {"success": True, "output": output, "error": None}


def refused(error: str, output: str = "") -> dict:
    return {"success": False, "output": output, "error": error}


def task_id_of(result: dict) -> str:
    return result["output"].split("task_id: ")[1].splitlines()[0]


def models(caller, **targets) -> ScriptedModels:
    return ScriptedModels(
        main=caller, **{name: targets.get(name, Target(name)) for name in ("researcher", "writer", "solo")}
    )


async def test_a_synchronous_delegation_answers_with_the_targets_headed_result(tmp_path):
    researcher = Target("researcher")
    caller = Caller(delegate(agent=" researcher ", prompt="find x", context="  we know y  "))
    async with running_core(tmp_path, models(caller, researcher=researcher), CONFIG) as core:
        main_run = await core.runs.get(await chat_and_wait(core))
        child = (await core.core.queries.children(MAIN_KEY))[0]

        async def archived():
            return (await core.sessions.get(child.session.key)).archived_at is not None

        await settle(core, archived)
        payloads = await outbox_payloads(core)
        task = (await delegate_tasks(core))[0]
    prompt = "[Context]\nwe know y\n\n[Task]\nfind x"
    assert caller.results == [ok(f"[Agent 'researcher' (test/researcher)]\nresearcher says: {prompt}")]
    assert researcher.prompts == [prompt]
    assert researcher.tools == [[]]  # not agentic: one model call, no tools
    assert "[Delegate Context]" in researcher.system[0]
    assert [p["body"] for p in payloads] == ["done"]  # only the asking agent's answer reaches the channel
    assert (child.session.agent_id, child.session.delegation, child.session.spawn_site) == (
        "researcher",
        Delegation.BOUNDED,
        SpawnSite.DELEGATE,
    )
    assert (child.run.parent_run_id, child.run.status, child.run.timeout_seconds) == (main_run.id, "completed", 120)
    assert (task.background, task.status) == (0, "completed")
    assert caller.agent_description == "Name of the agent to delegate to. Available: careful, researcher, solo, writer"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (
            delegate(action="explode"),
            "Unknown action 'explode'. Use delegate/check_result/list_results/cancel_task/await_sessions.",
        ),
        (delegate(prompt="x"), "Missing 'agent' parameter"),
        (delegate(agent="  ", prompt="x"), "'agent' parameter must not be empty"),
        (delegate(agent="researcher"), "Missing 'prompt' parameter"),
        (delegate(agent="researcher", prompt=" "), "'prompt' parameter must not be empty"),
        (delegate(agent="nobody", prompt="x"), f"Unknown agent 'nobody'. Available agents: {ALL_AGENTS}"),
        (delegate(agent="stranger", prompt="x"), UNREACHABLE_STRANGER),
        (
            delegate(agent="off", prompt="x"),
            'delegate target "off" is not reachable from "main": the target agent is disabled',
        ),
        (delegate(agent="careful", prompt="x"), ALWAYS_ASK),
        (delegate(agent="careful", prompt="x", background=True), ALWAYS_ASK),
        (
            delegate(parallel=["researcher", "ghost"], prompt="x"),
            f"Unknown agent 'ghost' in parallel list. Available: {ALL_AGENTS}",
        ),
        (delegate(parallel=["researcher", "stranger"], prompt="x"), UNREACHABLE_STRANGER),
        (delegate(parallel=[" ", 3], prompt="x"), "'parallel' array must contain at least one agent name"),
        (delegate(parallel=["researcher"]), "Missing 'prompt' parameter for parallel execution"),
    ],
)
async def test_each_refusal_uses_zeroclaws_words_and_launches_nothing(tmp_path, call, error):
    caller = Caller(call)
    async with running_core(tmp_path, models(caller), CONFIG) as core:
        await chat_and_wait(core)
        launched = await core.core.queries.children(MAIN_KEY)
    assert caller.results == [refused(error)]
    assert launched == []


@pytest.mark.parametrize(
    ("profile", "error"),
    [
        (
            '[risk_profiles.team]\ndelegation_policy = { mode = "forbidden" }\n',
            'delegation is forbidden for caller "main" by risk profile "team" delegation_policy; set '
            '[risk_profiles.team].delegation_policy mode = "allow"',
        ),
        (
            '[risk_profiles.team]\nlevel = "readonly"\ndelegation_policy = { mode = "allow" }\n',
            "Security policy: read-only mode, cannot perform 'delegate'",
        ),
    ],
)
async def test_the_callers_risk_profile_gates_delegation(tmp_path, profile, error):
    config = CONFIG.replace('[risk_profiles.team]\ndelegation_policy = { mode = "allow" }\n', profile)
    caller = Caller(delegate(agent="researcher", prompt="x"))
    async with running_core(tmp_path, models(caller), config) as core:
        await chat_and_wait(core)
    assert caller.results == [refused(error)]
    if "forbidden" in profile:
        assert caller.agent_description == "Name of the agent to delegate to. Available: (none configured)"


async def test_the_action_budget_is_shared_with_spawn_subagent_and_a_refusal_costs_nothing(tmp_path):
    config = CONFIG.replace(
        "[agents.list.main]\n",
        '[runtime_profiles.tight]\nmax_actions_per_hour = 2\n[agents.list.main]\nruntime_profile = "tight"\n',
    )
    caller = Caller(
        delegate(agent="stranger", prompt="x"),  # refused by reach: no action spent
        ("spawn_subagent", {"prompt": "sub: one"}),
        delegate(agent="researcher", prompt="two"),
        delegate(agent="writer", prompt="three"),
    )

    def main(messages, info):
        if first_prompt(messages).startswith("sub:"):
            return ModelResponse(parts=[TextPart("sub done")])
        return caller(messages, info)

    async with running_core(tmp_path, models(main), config) as core:
        await chat_and_wait(core)
    assert caller.results[1:] == [
        "sub done",
        ok("[Agent 'researcher' (test/researcher)]\nresearcher says: two"),
        refused(BUDGET_EXHAUSTED),
    ]


async def test_an_empty_answer_a_failure_and_a_timeout_are_named(tmp_path):
    config = CONFIG.replace(
        "[agents.list.solo]\n",
        '[runtime_profiles.quick]\ndelegation_timeout_secs = 1\n[agents.list.solo]\nruntime_profile = "quick"\n',
    )

    def broken(messages, info):
        raise RuntimeError("provider down")

    async def slow(messages, info):
        await asyncio.Event().wait()

    caller = Caller(
        delegate(agent="researcher", prompt="x"),
        delegate(agent="writer", prompt="x"),
        delegate(agent="solo", prompt="x"),
    )
    async with running_core(
        tmp_path, models(caller, researcher=Target("r", reply=""), writer=broken, solo=slow), config
    ) as core:
        await chat_and_wait(core)
        statuses = sorted((row.session.agent_id, row.run.status) for row in await core.core.queries.children(MAIN_KEY))
    assert caller.results == [
        refused("Agent 'researcher' failed: model provider returned an invalid semantic completion."),
        refused("Agent 'writer' failed: internal error (RuntimeError)"),
        refused("Agent 'solo' timed out after 1s"),
    ]
    assert statuses == [("researcher", "completed"), ("solo", "timed_out"), ("writer", "failed")]


async def test_parallel_delegation_returns_every_block_in_input_order(tmp_path):
    caller = Caller(delegate(parallel=["writer", " researcher ", ""], prompt="same"))
    async with running_core(tmp_path, models(caller, writer=Target("writer", reply="")), CONFIG) as core:
        await chat_and_wait(core)
        launched = sorted(row.session.agent_id for row in await core.core.queries.children(MAIN_KEY))
    assert caller.results == [
        refused(
            "One or more parallel agents failed",
            "[Parallel delegation: 2 agents]\n\n"
            "--- writer (success=false) ---\n\n"
            "Error: Agent 'writer' failed: model provider returned an invalid semantic completion.\n\n"
            "--- researcher (success=true) ---\n[Agent 'researcher' (test/researcher)]\nresearcher says: same",
        )
    ]
    assert launched == ["researcher", "writer"]


class Held:
    """A target that works until released (or forever), so a background task can be seen running."""

    def __init__(self, reply: str = "held result") -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.reply = reply

    async def __call__(self, messages, info) -> ModelResponse:
        self.started.set()
        await self.release.wait()
        return ModelResponse(parts=[TextPart(self.reply)])


async def test_a_background_task_is_started_checked_awaited_and_listed(tmp_path):
    held = Held()
    checked = asyncio.Event()

    def release_after_check(results):
        checked.set()
        return delegate(action="await_sessions", task_ids=[task_id_of(results[0])], timeout_ms=20000)

    caller = Caller(
        delegate(agent="researcher", prompt="long job", background=True),
        lambda results: delegate(action="check_result", task_id=task_id_of(results[0])),
        release_after_check,
        lambda results: delegate(action="check_result", task_id=task_id_of(results[0])),
        delegate(action="list_results"),
    )

    async def open_gate():
        await checked.wait()
        held.release.set()

    async with running_core(tmp_path, models(caller, researcher=held), CONFIG) as core:
        releaser = asyncio.create_task(open_gate())
        await chat_and_wait(core)
        await releaser
        payloads = await outbox_payloads(core)
    started, running, awaited, done, listed = caller.results
    task_id = task_id_of(started)
    assert started == ok(
        f"Background task started for agent 'researcher'.\ntask_id: {task_id}\n"
        f"Use action='check_result' with task_id='{task_id}' to retrieve the result."
    )
    record = json.loads(running["output"])
    assert (running["success"], running["error"], record["status"], record["output"]) == (False, None, "running", None)
    report = json.loads(awaited["output"])
    assert awaited["success"] is True
    assert (report["status"], report["completed"], report["pending"], report["missing"], report["failed"]) == (
        "complete",
        1,
        [],
        [],
        [],
    )
    final = json.loads(done["output"])
    assert done["success"] is True
    assert (final["status"], final["output"], final["error"]) == (
        "completed",
        "[Agent 'researcher' (test/researcher)]\nheld result",
        None,
    )
    assert final["finished_at"] is not None
    assert [(entry["task_id"], entry["status"]) for entry in json.loads(listed["output"])] == [(task_id, "completed")]
    assert [p["body"] for p in payloads] == ["done"]


async def test_cancel_task_really_stops_the_run_and_the_record_says_so(tmp_path):
    held = Held()
    caller = Caller(
        delegate(agent="researcher", prompt="forever", background=True),
        lambda results: delegate(action="cancel_task", task_id=task_id_of(results[0])),
        lambda results: delegate(action="check_result", task_id=task_id_of(results[0])),
        lambda results: delegate(action="cancel_task", task_id=task_id_of(results[0])),
        delegate(action="cancel_task", task_id="not-a-uuid"),
        delegate(action="check_result", task_id="0b0c43f2-5f0a-4a8e-9d55-1e1b8f0f3c2a"),
        delegate(action="cancel_task"),
    )
    async with running_core(tmp_path, models(caller, researcher=held), CONFIG) as core:
        await chat_and_wait(core)
        run = (await core.core.queries.children(MAIN_KEY))[0].run
    task_id = task_id_of(caller.results[0])
    cancelled, checked, again, bad, missing, no_id = caller.results[1:]
    assert cancelled == ok(f"Task '{task_id}' cancelled: the running task was aborted.")
    record = json.loads(checked["output"])
    assert (record["status"], record["error"]) == ("cancelled", "Cancelled by user request")
    assert checked["error"] == "Cancelled by user request"
    assert again == refused(f"Task '{task_id}' is not running (status: Cancelled)")
    assert bad == refused("Invalid task_id 'not-a-uuid': must be a valid UUID")
    assert missing == refused("No result found for task_id '0b0c43f2-5f0a-4a8e-9d55-1e1b8f0f3c2a'")
    assert no_id == refused("Missing 'task_id' parameter for cancel_task")
    assert run.status is RunStatus.KILLED


async def test_a_kill_from_outside_reads_as_cancelled_to_the_caller(tmp_path):
    held = Held()

    def after_kill(results):
        return delegate(action="check_result", task_id=task_id_of(results[0]))

    caller = Caller(delegate(agent="researcher", prompt="forever", background=True))
    async with running_core(tmp_path, models(caller, researcher=held), CONFIG) as core:
        await chat_and_wait(core)
        await asyncio.wait_for(held.started.wait(), 10)
        run = (await core.core.queries.children(MAIN_KEY))[0].run
        assert (await core.runs.get(run.id)).status is RunStatus.RUNNING
        assert [r.id for r in await core.core.commands.kill(run.id)] == [run.id]
        caller.steps.append(after_kill)
        await chat_and_wait(core, "check it")
    record = json.loads(caller.results[-1]["output"])
    assert (record["status"], record["error"]) == ("cancelled", "Cancelled by user request")


async def test_a_running_task_is_lost_after_a_restart_and_timed_out_past_its_deadline(tmp_path):
    held = Held()
    caller = Caller(
        delegate(agent="researcher", prompt="a", background=True),
        delegate(agent="writer", prompt="b", background=True),
    )
    async with running_core(tmp_path, models(caller, researcher=held, writer=held), CONFIG) as core:
        await chat_and_wait(core)
        await asyncio.wait_for(held.started.wait(), 10)
        running = [task.status for task in await delegate_tasks(core)]
    first, second = (task_id_of(result) for result in caller.results)
    # the second one's deadline passes while the bot is down:
    db = await Database.open(stores.database(tmp_path / "core.sqlite3"))
    async with db.transaction() as tx:
        await tx.execute("UPDATE delegate_tasks SET deadline = 0 WHERE task_id = ?", (second,))
    await db.close()
    caller.steps += [
        delegate(action="check_result", task_id=first),
        delegate(action="check_result", task_id=second),
    ]
    async with running_core(tmp_path, models(caller), CONFIG) as core:
        await chat_and_wait(core, "what happened?")
        runs = [row.run.status for row in await core.core.queries.children(MAIN_KEY)]
    lost, late = caller.results[2:]
    assert running == ["running", "running"]
    assert runs == [RunStatus.INTERRUPTED, RunStatus.INTERRUPTED]
    assert json.loads(lost["output"]) == {
        "task_id": first,
        "agent": "researcher",
        "status": "lost",
        "started_at": json.loads(lost["output"])["started_at"],
        "note": RECONCILED_NOTE,
    }
    assert lost["error"] == "background task is lost and will not complete"
    assert json.loads(late["output"])["status"] == "timed_out"
    assert late["error"] == "background task is timed_out and will not complete"


async def test_a_task_resumed_after_a_restart_is_still_stopped_at_its_deadline(tmp_path):
    """Its deadline's timer lived in the process that started it; the next start rebuilds it from the database, or the
    resumed run would hang until its turn's own timeout (120 s)."""
    caller = Caller(delegate(agent="researcher", prompt="long job", background=True))
    async with running_core(tmp_path, models(caller, researcher=Held()), CONFIG, durable=True) as core:
        await chat_and_wait(core)
        [task_id] = [task_id_of(result) for result in caller.results]
    deadline = time.time() + 2  # the deadline is close when the bot comes back
    db = await Database.open(stores.database(tmp_path / "core.sqlite3"))
    async with db.transaction() as tx:
        await tx.execute("UPDATE delegate_tasks SET deadline = ? WHERE task_id = ?", (deadline, task_id))
    await db.close()
    resumed = Held()
    async with running_core(tmp_path, models(caller, researcher=resumed), CONFIG, durable=True) as core:
        await asyncio.wait_for(resumed.started.wait(), 10)  # the run goes on from its journal

        async def ended():
            task = (await delegate_tasks(core))[0]
            return (task.status, task.error, task.finished_at) if task.status != "running" else None

        status, error, finished_at = await core.core.ctx.signals.wait_for(ended, 10) or ("running", None, None)
        [child] = await core.core.queries.children(MAIN_KEY)
    assert (status, error) == ("timed_out", "Agent 'researcher' timed out after 120s")
    assert finished_at >= deadline
    assert child.run.status is RunStatus.KILLED


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({}, "Missing 'task_ids' parameter for await_sessions"),
        ({"task_ids": []}, "'task_ids' must contain at least one task id"),
        ({"task_ids": [3]}, "'task_ids' must contain only strings"),
        ({"task_ids": ["x"]}, "Invalid task_id 'x': must be a valid UUID"),
        (
            {"task_ids": ["0b0c43f2-5f0a-4a8e-9d55-1e1b8f0f3c2a"] * 2},
            "Duplicate task_id '0b0c43f2-5f0a-4a8e-9d55-1e1b8f0f3c2a' in task_ids",
        ),
        (
            {"task_ids": [f"00000000-0000-4000-8000-{n:012d}" for n in range(129)]},
            "'task_ids' must contain no more than 128 task ids",
        ),
        (
            {"task_ids": ["0b0c43f2-5f0a-4a8e-9d55-1e1b8f0f3c2a"], "timeout_ms": "soon"},
            "'timeout_ms' must be an integer",
        ),
        (
            {"task_ids": ["0b0c43f2-5f0a-4a8e-9d55-1e1b8f0f3c2a"], "timeout_ms": 120001},
            "'timeout_ms' must be no more than 120000",
        ),
    ],
)
async def test_await_sessions_refuses_bad_arguments(tmp_path, args, error):
    caller = Caller(delegate(action="await_sessions", **args))
    async with running_core(tmp_path, models(caller), CONFIG) as core:
        await chat_and_wait(core)
    assert caller.results == [refused(error)]


async def test_await_sessions_reports_what_is_still_pending_and_missing_at_its_deadline(tmp_path):
    held = Held()
    missing = "0b0c43f2-5f0a-4a8e-9d55-1e1b8f0f3c2a"
    caller = Caller(
        delegate(agent="researcher", prompt="a", background=True),
        lambda results: delegate(action="await_sessions", task_ids=[task_id_of(results[0]), missing], timeout_ms=0),
        delegate(action="list_results"),
    )
    async with running_core(tmp_path, models(caller, researcher=held), CONFIG) as core:
        await chat_and_wait(core)
        held.release.set()
    report = json.loads(caller.results[1]["output"])
    assert caller.results[1]["error"] == "one or more background tasks are still pending or missing"
    assert (report["status"], report["pending"], report["missing"]) == (
        "timeout",
        [task_id_of(caller.results[0])],
        [missing],
    )


NESTED = """
[agents.defaults]
model = "test/main"
[agents.defaults.subagents]
announce = "direct"
max_spawn_depth = 2
allow_agents = ["*"]
[risk_profiles.team]
delegation_policy = { mode = "allow" }
excluded_tools = ["sessions_history"]
[risk_profiles.wide]
delegation_policy = { mode = "allow" }
[runtime_profiles.shallow]
max_delegation_depth = 1
[runtime_profiles.agentic]
agentic = true
max_tool_iterations = 2
agentic_timeout_secs = 1
[agents.list.main]
risk_profile = "team"
delegates = [{ agent = "analyst", mode = "bounded" }, { agent = "solo", mode = "independent" }]
[agents.list.planner]
model = "test/planner"
risk_profile = "team"
[agents.list.analyst]
model = "test/analyst"
risk_profile = "wide"
runtime_profile = "agentic"
[agents.list.solo]
model = "test/solo"
risk_profile = "wide"
runtime_profile = "agentic"
[agents.list.deep]
model = "test/solo"
risk_profile = "team"
runtime_profile = "shallow"
"""


async def test_the_targets_depth_limit_counts_the_callers_depth(tmp_path):
    planner = Caller(
        delegate(agent="deep", prompt="x"),
        delegate(agent="deep", prompt="x", background=True),
    )
    main = Caller(("sessions_spawn", {"task": "plan it", "agentId": "planner"}))
    async with running_core(tmp_path, ScriptedModels(main=main, planner=planner), NESTED) as core:
        await chat_and_wait(core)

        async def planned():
            return len(planner.results) == 2

        await settle(core, planned)
    assert planner.results == [
        refused("Delegation depth limit reached (1/1). Cannot delegate further to prevent infinite loops."),
        refused("Delegation depth limit reached (1/1)."),
    ]


async def test_a_bounded_delegate_gets_no_tool_its_caller_lacks_and_an_independent_one_its_own(tmp_path):
    analyst, solo = Target("analyst"), Target("solo")
    main = Caller(delegate(agent="analyst", prompt="a"), delegate(agent="solo", prompt="b"))
    config = NESTED.replace("max_spawn_depth = 2", "max_spawn_depth = 3")
    async with running_core(tmp_path, ScriptedModels(main=main, analyst=analyst, solo=solo), config) as core:
        await chat_and_wait(core)
    spawning = ["sessions_list", "sessions_spawn", "spawn_subagent", "subagents"]
    assert "delegate" in main.tools and "sessions_history" not in main.tools
    assert analyst.tools == [spawning]  # no delegate, and no sessions_history: its caller has none
    assert solo.tools == [sorted([*spawning, "sessions_history"])]
    assert main.results[0]["output"].startswith("[Agent 'analyst' (test/analyst, agentic)]\n")


async def test_an_agentic_delegate_stops_at_its_tool_iterations(tmp_path):
    def looping(messages, info):
        return ModelResponse(parts=[ToolCallPart("sessions_list", {})])

    main = Caller(delegate(agent="analyst", prompt="loop"))
    async with running_core(tmp_path, ScriptedModels(main=main, analyst=looping), NESTED) as core:
        await chat_and_wait(core)
    assert main.results == [refused("Agent 'analyst' failed: Agent exceeded maximum tool iterations (2)")]


async def test_a_delegation_still_running_at_its_deadline_is_stopped_with_its_subtree(tmp_path, monkeypatch):
    """A delegate waiting on its own children has no turn to time out; its deadline stops it."""
    monkeypatch.setattr("bot.core.tools.delegation.DEADLINE_GRACE", 0.0)
    held = Held()
    analyst = Caller(("sessions_spawn", {"task": "dig", "agentId": "planner"}))
    main = Caller(delegate(agent="analyst", prompt="research"))
    async with running_core(tmp_path, ScriptedModels(main=main, analyst=analyst, planner=held), NESTED) as core:
        await chat_and_wait(core)
        statuses = await agent_runs(core)
        [task] = await delegate_tasks(core)
    assert main.results == [refused("Agent 'analyst' timed out after 1s")]
    assert [tuple(row) for row in statuses] == [("main", "completed"), ("analyst", "killed"), ("planner", "killed")]
    assert (task.status, task.error) == ("timed_out", "Agent 'analyst' timed out after 1s")


async def test_a_waiting_orchestrator_is_woken_with_its_background_tasks_result(tmp_path):
    held = Held("the deep answer")
    seen: list[str] = []

    def planner(messages, info):
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart("delegate", {"agent": "solo", "prompt": "dig", "background": True})]
            )
        if tool_returns(messages):
            held.release.set()
            return ModelResponse(parts=[TextPart("waiting for my task")])
        seen.append(str(messages[-1].parts[-1].content))
        return ModelResponse(parts=[TextPart("final: built on the deep answer")])

    config = NESTED.replace(  # within main's policy (a wider planner would be refused), solo listed to reach it
        '[agents.list.planner]\nmodel = "test/planner"\nrisk_profile = "team"',
        '[agents.list.planner]\nmodel = "test/planner"\nrisk_profile = "team"\ndelegates = ["solo"]',
    )
    main = Caller(("sessions_spawn", {"task": "plan it", "agentId": "planner"}))
    async with running_core(tmp_path, ScriptedModels(main=main, planner=planner, solo=held), config) as core:
        await chat_and_wait(core)

        async def announced():
            return any("final:" in p["body"] for p in await outbox_payloads(core))

        await settle(core, announced)
        [task] = await delegate_tasks(core)
    assert (task.status, task.output) == ("completed", "[Agent 'solo' (test/solo, agentic)]\nthe deep answer")
    assert len(seen) == 1 and "the deep answer" in seen[0]


async def test_a_bounded_delegate_spends_its_callers_budget_and_an_independent_one_its_own(tmp_path):
    config = NESTED.replace("max_spawn_depth = 2", "max_spawn_depth = 3").replace("max_tool_iterations = 2", "")
    config = config.replace(
        '[agents.list.main]\nrisk_profile = "team"',
        '[runtime_profiles.tight]\nmax_actions_per_hour = 3\n[agents.list.main]\nrisk_profile = "team"\n'
        'runtime_profile = "tight"',
    )
    twice = [("spawn_subagent", {"prompt": "sub: 1"}), ("spawn_subagent", {"prompt": "sub: 2"})]
    solo, analyst = Caller(*twice), Caller(*twice)

    def answering(agent: Caller):
        def model(messages, info):
            if first_prompt(messages).startswith("sub:"):
                return ModelResponse(parts=[TextPart("sub done")])
            return agent(messages, info)

        return model

    main = Caller(delegate(agent="solo", prompt="own budget"), delegate(agent="analyst", prompt="shared budget"))
    scripted = ScriptedModels(main=main, solo=answering(solo), analyst=answering(analyst))
    async with running_core(tmp_path, scripted, config) as core:
        await chat_and_wait(core)
    sub_done = "sub done"
    assert solo.results == [sub_done, sub_done]  # an independent delegate has its own budget (20 an hour)
    assert analyst.results == [sub_done, BUDGET_EXHAUSTED]  # main's 3rd action, then none
    assert [result["success"] for result in main.results] == [True, True]


class Costly:
    """An agentic delegate that calls ``sessions_list`` ``calls`` times, then answers; each response costs $0.006."""

    def __init__(self, calls: int) -> None:
        self.calls, self.requests = calls, 0

    def __call__(self, messages: list[ModelMessage], info) -> ModelResponse:
        self.requests += 1
        usage = RequestUsage(input_tokens=10, output_tokens=5, cost=Decimal("0.006"))
        if self.requests > self.calls:
            return ModelResponse(parts=[TextPart("spent")], usage=usage)
        return ModelResponse(parts=[ToolCallPart("sessions_list", {})], usage=usage)


SPENDING = """
[agents.defaults]
model = "test/main"
[agents.defaults.subagents]
announce = "direct"
max_spawn_depth = 2
[risk_profiles.team]
delegation_policy = { mode = "allow" }
[runtime_profiles.thrifty]
max_cost_per_day_cents = 1
[runtime_profiles.spender]
agentic = true
max_tool_iterations = 10
max_cost_per_day_cents = 100
[agents.list.main]
risk_profile = "team"
runtime_profile = "thrifty"
delegates = [{ agent = "bounded", mode = "bounded" }, { agent = "own", mode = "independent" }]
[agents.list.bounded]
model = "test/bounded"
risk_profile = "team"
runtime_profile = "spender"
[agents.list.own]
model = "test/own"
risk_profile = "team"
runtime_profile = "spender"
"""
OVER_MAINS_CAP = "Budget exceeded: $0.0120 of $0.01 Day limit. Cannot make further API calls until the budget resets."


async def test_a_bounded_delegate_spends_its_callers_money_and_an_independent_one_its_own(tmp_path):
    bounded, own = Costly(calls=3), Costly(calls=3)
    main = Caller(delegate(agent="own", prompt="on my budget"), delegate(agent="bounded", prompt="on yours"))
    async with running_core(tmp_path, ScriptedModels(main=main, bounded=bounded, own=own), SPENDING) as core:
        main_run = await core.runs.get(await chat_and_wait(core))
        own_task, bounded_task = await delegate_tasks(core)
        mains = await usage_days(core, guild_id=ORIGIN.guild_id, user_id=ORIGIN.user_id, agent_id="main")
    assert (own.requests, own_task.status) == (4, "completed")  # $0.024, under its own $1.00 a day
    assert (bounded.requests, bounded_task.status) == (2, "failed")  # stopped at main's $0.01 a day
    assert bounded_task.error == f"Agent 'bounded' failed: {OVER_MAINS_CAP}"
    assert (main_run.status, main_run.error) == (RunStatus.FAILED, OVER_MAINS_CAP)  # main's budget is spent too
    assert [(row.runs, row.requests, row.cost_nanousd) for row in mains] == [
        (2, 4, 12_000_000)
    ]  # main's own and its bounded delegate's


async def test_a_bounded_delegates_launches_use_up_its_callers_actions(tmp_path):
    config = NESTED.replace("max_spawn_depth = 2", "max_spawn_depth = 3").replace("max_tool_iterations = 2", "")
    config = config.replace(
        '[agents.list.main]\nrisk_profile = "team"',
        '[runtime_profiles.tight]\nmax_actions_per_hour = 2\n[agents.list.main]\nrisk_profile = "team"\n'
        'runtime_profile = "tight"',
    )
    analyst = Caller(("spawn_subagent", {"prompt": "sub: 1"}))

    def answering(messages, info):
        if first_prompt(messages).startswith("sub:"):
            return ModelResponse(parts=[TextPart("sub done")])
        return analyst(messages, info)

    main = Caller(delegate(agent="analyst", prompt="shared budget"), ("spawn_subagent", {"prompt": "sub: 2"}))
    async with running_core(tmp_path, ScriptedModels(main=main, analyst=answering), config) as core:
        await chat_and_wait(core)
    assert analyst.results == ["sub done"]  # main's 2nd action
    assert main.results[0]["success"] is True
    assert main.results[1] == BUDGET_EXHAUSTED  # main's own 3rd: none left


async def test_background_delegations_in_flight_are_capped(tmp_path, monkeypatch):
    monkeypatch.setattr("bot.core.tools.delegation.MAX_BACKGROUND", 1)
    held = Held()
    caller = Caller(
        delegate(agent="researcher", prompt="a", background=True),
        delegate(agent="writer", prompt="b", background=True),
    )
    async with running_core(tmp_path, models(caller, researcher=held), CONFIG) as core:
        await chat_and_wait(core)
        launched = len(await core.core.queries.children(MAIN_KEY))
        held.release.set()
    assert caller.results[1] == refused(
        "Too many background delegations in flight (limit 1). Wait for some to finish (check_result) or cancel one "
        "(cancel_task) before starting more."
    )
    assert launched == 1


@pytest.mark.parametrize(
    "config",
    [
        '[agents.defaults]\nmodel = "test/main"\n[risk_profiles.team]\ndelegation_policy = { mode = "allow" }\n'
        '[agents.list.main]\nrisk_profile = "team"\n',  # nobody to delegate to
        '[agents.defaults]\nmodel = "test/main"\n[agents.list.main]\n[agents.list.researcher]\n',  # OpenClaw-style
    ],
)
async def test_delegate_is_not_offered_without_a_target_or_a_risk_profile(tmp_path, config):
    caller = Caller()
    async with running_core(tmp_path, ScriptedModels(main=caller), config) as core:
        await chat_and_wait(core)
    assert "delegate" not in caller.tools and "spawn_subagent" in caller.tools


async def test_a_bounded_delegate_cannot_spawn_subagents_when_its_caller_may_not(tmp_path):
    """``spawn_subagent`` is offered to everyone (it refuses in its own words); a bounded delegate's ceiling is what
    its caller may actually use, so a caller whose risk profile excludes it cannot get it run through a delegate."""
    analyst = Caller(("spawn_subagent", {"prompt": "sub: dig"}))
    config = NESTED.replace("max_spawn_depth = 2", "max_spawn_depth = 3").replace(
        'excluded_tools = ["sessions_history"]', 'excluded_tools = ["sessions_history", "spawn_subagent"]'
    )
    main = Caller(delegate(agent="analyst", prompt="a"))

    def answering(messages, info):
        if first_prompt(messages).startswith("sub:"):
            return ModelResponse(parts=[TextPart("sub done")])
        return analyst(messages, info)

    async with running_core(tmp_path, ScriptedModels(main=main, analyst=answering), config) as core:
        await chat_and_wait(core)
        spawned = await session_delegations(core)
    assert "spawn_subagent" not in analyst.tools
    assert "subagent" not in spawned


async def test_a_background_result_that_arrives_while_its_caller_is_mid_turn_still_reaches_it(tmp_path):
    """The task ends before its caller (a sub-agent) ends the turn that started it: the caller does not wait on its
    children then, so the result must already be in its inbox — else it is never told."""
    held = Held("the deep answer")
    seen: list[str] = []
    core_ref: list = []

    async def planner(messages, info):
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart("delegate", {"agent": "solo", "prompt": "dig", "background": True})]
            )
        if tool_returns(messages):
            held.release.set()

            async def task_done():
                return [task.status for task in await delegate_tasks(core_ref[0])] == ["completed"]

            await settle(core_ref[0], task_done)
            return ModelResponse(parts=[TextPart("waiting for my task")])
        seen.append(str(messages[-1].parts[-1].content))
        return ModelResponse(parts=[TextPart("final: built on the deep answer")])

    config = NESTED.replace(  # within main's policy (a wider planner would be refused), solo listed to reach it
        '[agents.list.planner]\nmodel = "test/planner"\nrisk_profile = "team"',
        '[agents.list.planner]\nmodel = "test/planner"\nrisk_profile = "team"\ndelegates = ["solo"]',
    )
    main = Caller(("sessions_spawn", {"task": "plan it", "agentId": "planner"}))
    async with running_core(tmp_path, ScriptedModels(main=main, planner=planner, solo=held), config) as core:
        core_ref.append(core)
        await chat_and_wait(core)

        async def planner_done():
            return [run.status for run in await agent_runs(core) if run.agent_id == "planner"] == ["completed"]

        await settle(core, planner_done)
        payloads = [p["body"] for p in await outbox_payloads(core)]
    assert len(seen) == 1 and "the deep answer" in seen[0]
    assert any("final:" in body for body in payloads)


async def test_nothing_is_launched_for_a_caller_whose_run_ended_while_the_launch_waited(tmp_path):
    """A kill (or the end of a turn) can commit between a tool's checks and its launch's transaction: the launch
    then writes nothing."""
    held = Held()
    caller = Caller(delegate(agent="researcher", prompt="a", background=True))
    async with running_core(tmp_path, models(caller, researcher=held), CONFIG) as core:
        chat_id = await core.chat(ChatRequest(text="go", origin=ORIGIN))
        await asyncio.wait_for(held.started.wait(), 10)
        child = (await core.core.queries.children(MAIN_KEY))[0]
        held.release.set()
        await settle(core, lambda: _terminal(core, chat_id))
        late = replace(child.run, id="f" * 32, status=RunStatus.QUEUED)  # a second launch by the same, ended, run
        with pytest.raises(CallerEnded):
            await core.core.spawning.persist_and_queue(late, None, replace(child.session, key="agent:researcher:late"))
        assert await core.runs.get(late.id) is None and await core.sessions.get("agent:researcher:late") is None


async def _terminal(core, run_id: str) -> bool:
    return (await core.runs.get(run_id)).status.is_terminal
