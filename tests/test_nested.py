"""Nested sub-agents in the core (FunctionModel scripts): the announce chain, waiting and waking, batching,
tool policy by role, and what a killed or finished requester does to late completions."""

from __future__ import annotations

import asyncio
import json

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from bot.core.runs import internal_context
from bot.core.runs.requests import ChatRequest
from bot.core.tools.session_toolset import Caller
from bot.records import RunStatus
from tests.core_support import (
    ORIGIN,
    ScriptedModels,
    last_request,
    running_core,
    settle,
    tool_returns,
    user_texts,
)
from tests.db_views import agent_runs, inbox_count, outbox_payloads

NESTED = """
[agents.defaults]
model = "test/main"
[agents.defaults.subagents]
announce = "direct"
max_spawn_depth = 2
max_concurrent = 8
allow_agents = ["*"]
[agents.list.main]
[agents.list.planner]
model = "test/planner"
[agents.list.worker]
model = "test/worker"
"""


def spawn_call(**args) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("sessions_spawn", args)])


def main_spawns_planner(messages, info):
    """The main agent hands the whole job to a planner, then tells the user it did."""
    if tool_returns(messages):
        accepted = json.loads(tool_returns(messages)[0].model_response_str())
        return ModelResponse(parts=[TextPart(f"Started the planner ({accepted['status']}).")])
    return spawn_call(agentId="planner", task="Plan the launch", label="planner")


class Planner:
    """Fans out to three workers, ends its turn, and synthesises when woken with their results."""

    def __init__(self) -> None:
        self.requests: list[list[str]] = []
        self.tool_names: list[str] = []

    def __call__(self, messages, info):
        self.tool_names = sorted(t.name for t in info.function_tools)
        prompts = user_texts(last_request(messages))
        self.requests.append(prompts)
        if prompts and internal_context.BEGIN in prompts[-1]:
            results = sorted(line for line in prompts[-1].splitlines() if line.startswith("result of "))
            return ModelResponse(parts=[TextPart("Synthesis: " + "; ".join(results))])
        if tool_returns(messages):
            return ModelResponse(parts=[TextPart("Waiting for my workers.")])
        return ModelResponse(
            parts=[ToolCallPart("sessions_spawn", {"agentId": "worker", "task": f"part {i}"}) for i in (1, 2, 3)]
        )


class Workers:
    """Workers block until released all at once, so their completions arrive at the same moment."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = 0
        self.tool_names: list[str] = []

    async def __call__(self, messages, info):
        self.tool_names = sorted(t.name for t in info.function_tools)
        self.started += 1
        await self.release.wait()
        return ModelResponse(parts=[TextPart(f"result of {user_texts(messages[0])[0]}")])


async def statuses(core) -> dict[str, list[str]]:
    rows = await agent_runs(core)
    found: dict[str, list[str]] = {}
    for agent, status in rows:
        found.setdefault(agent, []).append(status)
    return found


async def test_orchestrator_fans_out_waits_and_synthesises_once(tmp_path):
    planner, workers = Planner(), Workers()
    models = ScriptedModels(main=main_spawns_planner, planner=planner, worker=workers)
    async with running_core(tmp_path, models, NESTED) as core:
        await core.chat(ChatRequest(text="launch it", origin=ORIGIN))

        async def planner_waiting():
            return (await statuses(core)).get("planner") == ["waiting_children"] and workers.started == 3

        await settle(core, planner_waiting)
        listed = await core.core.queries.children("agent:main:discord:channel:100")
        assert [row.status for row in listed] == ["waiting on 3 children"]
        main = await core.sessions.get("agent:main:discord:channel:100")
        busy = await core.core.tools.tool_sessions_send(
            Caller(main, listed[0].run.parent_run_id), listed[0].session.key, "hi"
        )
        assert busy == {
            "status": "error",
            "error": f"Session {listed[0].session.key} is waiting on its children; message them.",
        }

        workers.release.set()

        async def all_done():
            return await statuses(core) == {
                "main": ["completed"],
                "planner": ["completed"],
                "worker": ["completed"] * 3,
            }

        await settle(core, all_done)
        payloads = await outbox_payloads(core)

    assert [p["kind"] for p in payloads] == ["reply", "completion"]
    assert payloads[0]["body"] == "Started the planner (accepted)."
    final = payloads[1]
    assert final["agent_label"] == "planner" and final["status_line"] == "completed successfully"
    assert final["body"] == "Synthesis: result of part 1; result of part 2; result of part 3"
    assert final["mention_user_id"] == 7
    assert len(planner.requests) == 3  # spawn, wait, one batched wake
    wake = planner.requests[2][-1]
    assert wake.count("[Internal task completion event]") == 3
    assert internal_context.WAKE_NOTE in wake
    assert planner.tool_names == [
        "attach_file",
        "sessions_history",
        "sessions_list",
        "sessions_spawn",
        "spawn_subagent",
        "subagents",
    ]
    assert workers.tool_names == ["attach_file"]


async def test_completion_is_steered_into_a_running_requester(tmp_path):
    """A child that finishes while its orchestrator's loop still runs reaches the next model request."""
    seen: list[str] = []

    async def planner(messages, info):
        prompts = user_texts(last_request(messages))
        if any(internal_context.BEGIN in p for p in prompts):
            seen.extend(prompts)
            return ModelResponse(parts=[TextPart("Got it: " + ("quick answer" in prompts[-1]) * "quick answer")])
        if tool_returns(messages) and len(seen) == 0:
            await asyncio.sleep(0.05)  # the planner still in its loop while the child finishes
            return ModelResponse(parts=[ToolCallPart("sessions_list", {})])
        return spawn_call(agentId="worker", task="quick")

    models = ScriptedModels(
        main=main_spawns_planner,
        planner=planner,
        worker=lambda m, i: ModelResponse(parts=[TextPart("quick answer")]),
    )
    async with running_core(tmp_path, models, NESTED) as core:
        await core.chat(ChatRequest(text="go", origin=ORIGIN))

        async def planner_done():
            return (await statuses(core)).get("planner") == ["completed"]

        await settle(core, planner_done)
        payloads = await outbox_payloads(core)

    assert len(seen) == 1 and "quick answer" in seen[0]
    assert [p["body"] for p in payloads if p["kind"] == "completion"] == ["Got it: quick answer"]


async def test_nothing_internal_reaches_the_announcement_payload_unstripped(tmp_path):
    """An orchestrator that parrots its internal context: the Discord choke point strips it (render test)."""
    from bot.core.runs.announcements import Announcement
    from bot.discord_adapter.render import render

    echo = internal_context.wrap(["[Internal task completion event]\nsecret: 1"])
    announcement = Announcement(
        kind="completion",
        status=RunStatus.COMPLETED,
        status_line="completed successfully",
        body=f"Here you go.\n{echo}\nBye.",
        agent_label="planner",
        run_id="r" * 32,
        session_key="k",
    )
    content = "\n".join(message.content for message in render(announcement))
    assert "Here you go." in content and "Bye." in content
    assert "INTERNAL" not in content and "secret: 1" not in content


async def test_silent_reply_posts_nothing(tmp_path):
    models = ScriptedModels(main=lambda m, i: ModelResponse(parts=[TextPart("NO_REPLY")]))
    async with running_core(tmp_path, models, NESTED) as core:
        run_id = await core.chat(ChatRequest(text="hello", origin=ORIGIN))

        async def done():
            run = await core.runs.get(run_id)
            return run.status is RunStatus.COMPLETED

        await settle(core, done)
        assert await outbox_payloads(core) == []


def planner_with_one_worker(messages, info):
    if tool_returns(messages):
        return ModelResponse(parts=[TextPart("waiting")])
    return spawn_call(agentId="worker", task="slow")


async def planner_waiting_on_its_worker(core, workers: Workers) -> None:
    await core.chat(ChatRequest(text="go", origin=ORIGIN))

    async def waiting():
        return (await statuses(core)).get("planner") == ["waiting_children"] and workers.started == 1

    await settle(core, waiting)


async def test_child_of_killed_orchestrator_posts_nothing(tmp_path):
    workers = Workers()
    models = ScriptedModels(main=main_spawns_planner, planner=planner_with_one_worker, worker=workers)
    async with running_core(tmp_path, models, NESTED) as core:
        await planner_waiting_on_its_worker(core, workers)
        planner_run = (await core.core.queries.children("agent:main:discord:channel:100"))[0].run
        killed = await core.core.commands.kill(planner_run.id)
        assert [r.session_key.split(":")[1] for r in killed] == ["worker", "planner"]  # children first
        workers.release.set()
        await core.core.dispatch.wait_idle()

        assert await statuses(core) == {"main": ["completed"], "planner": ["killed"], "worker": ["killed"]}
        assert [p["kind"] for p in await outbox_payloads(core)] == ["reply"]


async def test_late_child_of_a_finished_run_goes_to_the_requesters_requester(tmp_path):
    """The planner's run fails while its worker still runs: the worker's result is not injected into the
    planner's next run, but announced to the planner's own requester (the channel)."""
    workers = Workers()
    planner_prompts: list[list[str]] = []

    def planner(messages, info):
        planner_prompts.append(user_texts(last_request(messages)))
        if len(planner_prompts) == 1:
            return spawn_call(agentId="worker", task="slow")
        if len(planner_prompts) == 2:
            raise RuntimeError("planner crashed")
        return ModelResponse(parts=[TextPart("follow-up answer")])

    models = ScriptedModels(main=main_spawns_planner, planner=planner, worker=workers)
    async with running_core(tmp_path, models, NESTED) as core:
        await core.chat(ChatRequest(text="go", origin=ORIGIN))

        async def planner_failed():
            return (await statuses(core)).get("planner") == ["failed"]

        await settle(core, planner_failed)
        workers.release.set()

        async def worker_done():
            return (await statuses(core)).get("worker") == ["completed"]

        await settle(core, worker_done)
        payloads = await outbox_payloads(core)
        assert [(p["agent_label"], p["status"]) for p in payloads if p["kind"] == "completion"] == [
            ("planner", "failed"),
            ("worker", "completed"),
        ]
        assert await inbox_count(core) == 0


async def test_interrupted_chain_announces_only_its_top_after_restart(tmp_path):
    workers = Workers()
    models = ScriptedModels(main=main_spawns_planner, planner=planner_with_one_worker, worker=workers)
    async with running_core(tmp_path, models, NESTED) as core:
        await planner_waiting_on_its_worker(core, workers)

    async with running_core(tmp_path, models, NESTED) as core:
        assert await statuses(core) == {"main": ["completed"], "planner": ["interrupted"], "worker": ["interrupted"]}
        completions = [p for p in await outbox_payloads(core) if p["kind"] == "completion"]
        assert [(p["agent_label"], p["status"]) for p in completions] == [("planner", "interrupted")]


async def test_child_does_not_inherit_its_parents_deadline(tmp_path):
    """The planner times out after 1 s while its worker needs longer: the worker still completes, because it
    runs from the orchestrator's supervisor task, not inside the planner's tool call."""
    worker_started = asyncio.Event()

    async def planner(messages, info):
        if tool_returns(messages):
            await asyncio.sleep(5)  # outlives the planner's own deadline
        return spawn_call(agentId="worker", task="slow but fine")

    async def planner_timed_out():
        return (await statuses(core)).get("planner") == ["timed_out"]

    async def worker(messages, info):
        worker_started.set()
        await settle(core, planner_timed_out)  # outlives the planner's deadline
        return ModelResponse(parts=[TextPart("worker made it")])

    config = NESTED.replace('model = "test/planner"', 'model = "test/planner"\nsubagents = { run_timeout_seconds = 1 }')
    models = ScriptedModels(main=main_spawns_planner, planner=planner, worker=worker)
    async with running_core(tmp_path, models, config) as core:
        await core.chat(ChatRequest(text="go", origin=ORIGIN))

        async def worker_done():
            return (await statuses(core)).get("worker") in (["completed"], ["timed_out"], ["failed"])

        await settle(core, worker_done, timeout=15)
        assert await statuses(core) == {"main": ["completed"], "planner": ["timed_out"], "worker": ["completed"]}
        bodies = [p["body"] for p in await outbox_payloads(core) if p["kind"] == "completion"]
        assert bodies[-1] == "worker made it"
