"""The session tools as a model sees and uses them: which are offered by role, what they answer, and
that refusals come back as data the model can read (FunctionModel scripts against the real core)."""

from __future__ import annotations

import asyncio

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from bot.core.runs.spawn_policy import SpawnArgs
from bot.records import RunStatus
from tests.core_support import (
    Gate,
    Script,
    ScriptedModels,
    chat_and_wait,
    last_request,
    running_core,
    settle,
    text,
    tool_returns,
    user_texts,
)
from tests.db_views import outbox_payloads, run_kinds, run_statuses, session_count, subagent_places

CONFIG = """
[agents.defaults]
model = "test/main"
[agents.defaults.subagents]
announce = "direct"
max_spawn_depth = 2
allow_agents = ["*"]
[agents.list.main]
[agents.list.worker]
model = "test/worker"
[agents.list.leafy]
model = "test/leafy"
"""


async def test_main_agent_gets_every_session_tool_and_refusals_come_back_as_data(tmp_path):
    script = Script(
        ("sessions_spawn", {"task": "x", "channel": "general"}),
        ("sessions_spawn", {"task": "x", "agentId": "Nope"}),
        ("sessions_spawn", {"task": "x", "runTimeoutSeconds": -5}),
        ("agents_list", {}),
    )
    config = CONFIG + "[agents.list.retired]\nenabled = false\n"  # not listed: it cannot be spawned
    async with running_core(tmp_path, ScriptedModels(main=script), config) as core:
        await chat_and_wait(core)
        assert await session_count(core, "subagent") == 0

    assert script.tools == [
        "agents_list",
        "attach_file",
        "model_switch",
        "sessions_history",
        "sessions_list",
        "sessions_send",
        "sessions_spawn",
        "spawn_subagent",
        "subagents",
    ]
    assert script.results[0] == {
        "status": "error",
        "error": 'sessions_spawn does not support "channel". Use "message" or "sessions_send" for channel delivery.',
    }
    assert script.results[1]["status"] == "error" and script.results[1]["error"].startswith('Invalid agentId "Nope"')
    assert script.results[2]["status"] == "error" and "runTimeoutSeconds" in script.results[2]["error"]
    assert script.results[3] == {
        "requester": "main",
        "allowAny": True,
        "agents": [
            {"id": "leafy", "name": "leafy", "sandboxed": False},
            {"id": "main", "name": "main", "sandboxed": False},
            {"id": "worker", "name": "worker", "sandboxed": False},
        ],
    }


async def test_leaf_is_offered_no_session_tools_and_calling_one_anyway_is_refused(tmp_path):
    seen_tools: list[list[str]] = []

    def leafy(messages, info):
        seen_tools.append([t.name for t in info.function_tools])
        refusals = tool_returns(messages)
        if refusals:
            return ModelResponse(parts=[TextPart(f"refused: {refusals[0].content}")])
        return ModelResponse(parts=[ToolCallPart("sessions_spawn", {"task": "sneaky"})])

    config = CONFIG.replace("max_spawn_depth = 2", "max_spawn_depth = 1")
    main = Script(("sessions_spawn", {"task": "try", "agentId": "leafy"}))
    async with running_core(tmp_path, ScriptedModels(main=main, leafy=leafy), config) as core:
        await chat_and_wait(core)

        async def leaf_done():
            statuses = await run_statuses(core, "spawn")
            return statuses and statuses[0] == "completed"

        await settle(core, leaf_done)
        assert await session_count(core, "subagent") == 1
        session = (await subagent_places(core))[0]
        assert tuple(session) == (1, "leaf")
        payloads = await outbox_payloads(core)

    assert seen_tools[0] == ["attach_file"]  # it may return files, but it starts nothing
    completion = next(p for p in payloads if p["kind"] == "completion")
    assert completion["body"] == "refused: Unknown tool name: 'sessions_spawn'. Available tools: 'attach_file'"


async def test_denied_tools_are_not_offered_to_orchestrators(tmp_path):
    offered: list[str] = []

    def worker(messages, info):
        offered.extend(sorted(t.name for t in info.function_tools))
        return ModelResponse(parts=[TextPart("ok")])

    config = CONFIG + '\n[tools.subagents.tools]\ndeny = ["sessions_history"]\n'
    main = Script(("sessions_spawn", {"task": "t", "agentId": "worker"}))
    async with running_core(tmp_path, ScriptedModels(main=main, worker=worker), config) as core:
        await chat_and_wait(core)
        await settle(core, lambda: _any_completion(core))
    assert offered == ["attach_file", "sessions_list", "sessions_spawn", "spawn_subagent", "subagents"]


async def _any_completion(core):
    return any(p["kind"] == "completion" for p in await outbox_payloads(core))


async def test_subagents_tool_lists_steers_and_kills_its_own_children(tmp_path):
    gate = Gate(reply="worker finished")
    steered: list[str] = []

    async def worker(messages, info):
        prompts = user_texts(last_request(messages))
        if any("STEER" in p for p in prompts):
            steered.extend(prompts)
            return ModelResponse(parts=[TextPart("steered answer")])
        return await gate(messages, info)

    main = Script(
        ("sessions_spawn", {"task": "long job", "agentId": "worker", "label": "Digger"}),
        ("subagents", {"action": "list"}),
        ("subagents", {"action": "kill", "target": "nobody"}),
    )
    async with running_core(tmp_path, ScriptedModels(main=main, worker=worker), CONFIG) as core:
        await chat_and_wait(core)
        assert main.results[1]["subagents"][0]["label"] == "Digger"
        assert main.results[1]["subagents"][0]["status"] in ("queued", "running")
        assert main.results[2] == {"status": "error", "error": "Unknown subagent id: nobody"}
        await gate.entered.wait()
        caller = await _caller(core)
        steer = await core.core.tools.tool_subagents(caller, "steer", "dig", "STEER: dig deeper")
        assert steer["status"] == "ok" and steer["result"].startswith("steered Digger (run ")
        gate.opened.set()
        await settle(core, lambda: _any_completion(core))
        finished = await core.core.tools.tool_subagents(caller, "kill", "1", None)
        assert finished == {"status": "error", "error": "Digger is already finished."}
        payloads = await outbox_payloads(core)

    assert steered and "STEER: dig deeper" in steered[-1]
    assert next(p for p in payloads if p["kind"] == "completion")["body"] == "steered answer"


async def _caller(core):
    from bot.core.tools.session_toolset import Caller

    main_session = await core.sessions.get("agent:main:discord:channel:100")
    chat_run = (await core.runs.for_session(main_session.key))[-1]
    return Caller(session=main_session, run_id=chat_run.id)


async def test_tool_refusals_quote_long_input_cut_and_invisible_messages_are_empty(tmp_path):
    main = Script(
        ("sessions_spawn", {"task": "job", "agentId": "worker"}),
        ("subagents", {"action": "kill", "target": "z" * 6000}),
        ("subagents", {"action": "steer", "target": "1", "message": "\u200b\u2060"}),
        ("subagents", {"action": "x" * 6000}),
        ("sessions_send", {"sessionKey": "agent:worker:" + "k" * 6000, "message": "hi"}),
        ("sessions_send", {"sessionKey": "agent:worker:x", "message": "\u3164\u00a0"}),
        ("sessions_spawn", {"task": "\u200b", "agentId": "worker"}),
    )
    async with running_core(tmp_path, ScriptedModels(main=main, worker=text("ok")), CONFIG) as core:
        await chat_and_wait(core)
        await settle(core, lambda: _any_completion(core))
        kinds = await run_kinds(core)

    assert main.results[1:] == [
        {"status": "error", "error": "Unknown subagent id: " + "z" * 79 + "…"},
        {"status": "error", "error": "Message must not be empty."},
        {"status": "error", "error": f'Unknown action "{"x" * 79}…". Use "list", "kill" or "steer".'},
        {"status": "error", "error": f"Unknown session 'agent:worker:{'k' * 66}…': not one of your sub-agents."},
        {"status": "error", "error": "Message must not be empty."},
        {"status": "error", "error": "Task must not be empty."},
    ]
    assert kinds == ["chat", "spawn"]


async def test_kill_through_the_tool_cascades_and_announces_nothing(tmp_path):
    gate = Gate()
    main = Script(("sessions_spawn", {"task": "long", "agentId": "worker", "label": "Slow"}))
    async with running_core(tmp_path, ScriptedModels(main=main, worker=gate), CONFIG) as core:
        await chat_and_wait(core)
        await gate.entered.wait()
        result = await core.core.tools.tool_subagents(await _caller(core), "kill", "Slow", None)
        assert result == {"status": "ok", "result": "killed Slow."}
        await core.core.dispatch.wait_idle()
        statuses = await run_statuses(core, "spawn")
        assert statuses == ["killed"]
        assert [p["kind"] for p in await outbox_payloads(core)] == ["reply"]


async def test_sessions_history_and_send_on_own_children_only(tmp_path):
    answers = iter(["first answer", "second answer"])

    def worker(messages, info):
        return ModelResponse(parts=[TextPart(next(answers))])

    main = Script(("sessions_spawn", {"task": "remember 42", "agentId": "worker"}))
    async with running_core(tmp_path, ScriptedModels(main=main, worker=worker), CONFIG) as core:
        await chat_and_wait(core)
        await settle(core, lambda: _any_completion(core))
        caller = await _caller(core)
        child_key = main.results[0]["childSessionKey"]

        history = await core.core.tools.tool_sessions_history(caller, child_key, 20, False)
        assert history["messages"] == [
            {"role": "user", "text": "remember 42"},
            {"role": "assistant", "text": "first answer"},
        ]
        assert (await core.core.tools.tool_sessions_history(caller, "agent:main:other", 20, False))["status"] == "error"

        main.calls.append(("sessions_send", {"sessionKey": child_key, "message": "and now?"}))
        await chat_and_wait(core, "send it")  # a tool call comes from a live turn
        sent = main.results[1]
        assert sent["status"] == "accepted" and sent["delivered"] == "started a follow-up run"

        async def two_completions():
            return len([p for p in await outbox_payloads(core) if p["kind"] == "completion"]) == 2

        await settle(core, two_completions)
        listed = await core.core.tools.tool_sessions_list(caller)
        assert [s["status"] for s in listed["sessions"]] == ["done"]
        assert (await core.runs.get(sent["runId"])).status is RunStatus.COMPLETED


async def test_lane_never_runs_more_than_max_concurrent_and_announces_each_once(tmp_path):
    running = 0
    peak = 0

    async def worker(messages, info):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)  # the model takes a moment: runs overlap if the lane lets them
        running -= 1
        return ModelResponse(parts=[TextPart("ok")])

    config = CONFIG.replace(
        "max_spawn_depth = 2", "max_spawn_depth = 2\nmax_concurrent = 2\nmax_children_per_agent = 20"
    )
    config = "[discord]\nmax_active_runs_per_member = 0\n" + config  # twenty for one member: no member cap here

    def main(messages, info):
        if tool_returns(messages):
            return ModelResponse(parts=[TextPart("spawned twenty")])
        return ModelResponse(
            parts=[ToolCallPart("sessions_spawn", {"task": f"job {i}", "agentId": "worker"}) for i in range(20)]
        )

    async with running_core(tmp_path, ScriptedModels(main=main, worker=worker), config) as core:
        await chat_and_wait(core)

        async def all_announced():
            return len([p for p in await outbox_payloads(core) if p["kind"] == "completion"]) == 20

        await settle(core, all_announced, timeout=30)
        await core.core.dispatch.wait_idle()
        payloads = await outbox_payloads(core)

    assert peak == 2
    completions = [p["run_id"] for p in payloads if p["kind"] == "completion"]
    assert len(completions) == len(set(completions)) == 20


async def test_a_leaf_session_controls_nothing_even_if_a_tool_reaches_it(tmp_path):
    """Control scope is read from storage: a leaf calling a control tool directly is refused."""
    from bot.core.tools.session_toolset import Caller

    config = CONFIG.replace("max_spawn_depth = 2", "max_spawn_depth = 1")
    main = Script(("sessions_spawn", {"task": "t", "agentId": "worker"}))
    async with running_core(
        tmp_path, ScriptedModels(main=main, worker=lambda m, i: ModelResponse(parts=[TextPart("ok")])), config
    ) as core:
        await chat_and_wait(core)
        leaf = await core.sessions.get(main.results[0]["childSessionKey"])
        assert (leaf.role, leaf.control_scope) == ("leaf", "none")
        refused = {"status": "forbidden", "error": "Leaf subagents cannot control other sessions."}
        caller = Caller(leaf, main.results[0]["runId"])
        assert await core.core.tools.tool_subagents(caller, "list", None, None) == refused
        assert await core.core.tools.tool_sessions_list(caller) == refused
        assert await core.core.tools.tool_sessions_send(caller, "agent:main:x", "hi") == refused
        assert await core.core.tools.tool_sessions_history(caller, "agent:main:x", 5, False) == refused
        spawn = await core.core.tools.tool_spawn(caller, SpawnArgs(task="more"))
        assert spawn == {
            "status": "forbidden",
            "error": "sessions_spawn is not allowed at this depth (current depth: 1, max: 1)",
        }


async def test_a_risk_profile_narrows_the_tools_offered_and_a_call_to_an_excluded_one_runs_nothing(tmp_path):
    offered: list[list[str]] = []

    def main(messages, info):
        offered.append(sorted(t.name for t in info.function_tools))
        refusals = tool_returns(messages)
        if refusals:
            return ModelResponse(parts=[TextPart(f"refused: {refusals[0].content}")])
        return ModelResponse(parts=[ToolCallPart("sessions_spawn", {"task": "sneaky", "agentId": "worker"})])

    config = (
        CONFIG.replace("[agents.list.main]\n", '[agents.list.main]\nrisk_profile = "careful"\n')
        + '\n[risk_profiles.careful]\nallowed_tools = ["sessions_spawn", "sessions_list", "agents_list"]\n'
        + 'excluded_tools = ["sessions_spawn"]\n'
    )
    async with running_core(tmp_path, ScriptedModels(main=main), config) as core:
        await chat_and_wait(core)
        assert await session_count(core, "subagent") == 0
        payloads = await outbox_payloads(core)

    assert offered[0] == ["agents_list", "sessions_list", "spawn_subagent"]  # spawn_subagent gates itself
    assert (
        payloads[-1]["body"] == "refused: Unknown tool name: 'sessions_spawn'. Available tools: "
        "'agents_list', 'sessions_list', 'spawn_subagent'"
    )


async def test_the_agents_runtime_profile_decides_which_repeated_calls_run(tmp_path):
    async def repeated_list_returns(config: str) -> list[object]:
        def main(messages, info):
            if tool_returns(messages):
                return ModelResponse(parts=[TextPart("ok")])
            return ModelResponse(parts=[ToolCallPart("sessions_list", {}), ToolCallPart("sessions_list", {})])

        async with running_core(tmp_path / str(len(config)), ScriptedModels(main=main), config) as core:
            await chat_and_wait(core)
            transcript = await core.transcripts.history("agent:main:discord:channel:100")
        return [part.content for part in tool_returns(transcript)]

    skipped = "Skipped duplicate tool call 'sessions_list' with identical arguments in this turn."
    assert await repeated_list_returns(CONFIG) == [{"sessions": []}, skipped]
    exempt = CONFIG.replace("[agents.list.main]\n", '[agents.list.main]\nruntime_profile = "lister"\n')
    exempt += '\n[runtime_profiles.lister]\ntool_call_dedup_exempt = ["sessions_list"]\n'
    assert await repeated_list_returns(exempt) == [{"sessions": []}, {"sessions": []}]


async def test_the_main_agent_switches_its_own_model_for_its_next_turns_and_only_to_a_configured_one(tmp_path):
    script = Script(("model_switch", {"model": "test/nowhere"}), ("model_switch", {"model": " test/worker "}))
    models = ScriptedModels(main=script, worker=text("the worker model answers"))
    async with running_core(tmp_path, models, CONFIG) as core:
        first = await chat_and_wait(core)
        assert (await core.runs.get(first)).model == "test/main"
    assert script.results == [
        {
            "status": "error",
            "error": "Unknown model 'test/nowhere'. Configured models: test/leafy, test/main, test/worker.",
        },
        {"status": "ok", "model": "test/worker", "note": "Applies from your next turn."},
    ]
    async with running_core(tmp_path, models, CONFIG) as core:  # after a restart, too
        for _ in range(2):
            run = await core.runs.get(await chat_and_wait(core))
            assert (run.model, run.result_text) == ("test/worker", "the worker model answers")


async def test_a_switched_model_the_config_no_longer_names_gives_way_to_the_agents_own(tmp_path):
    script = Script(("model_switch", {"model": "test/worker"}))
    models = ScriptedModels(main=script, worker=text("worker"))
    async with running_core(tmp_path, models, CONFIG) as core:
        await chat_and_wait(core)
    assert script.results == [{"status": "ok", "model": "test/worker", "note": "Applies from your next turn."}]
    without_worker = CONFIG.replace('[agents.list.worker]\nmodel = "test/worker"\n', "")
    async with running_core(tmp_path, models, without_worker) as core:
        run = await core.runs.get(await chat_and_wait(core))
    assert (run.model, run.status) == ("test/main", RunStatus.COMPLETED)
