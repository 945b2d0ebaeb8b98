"""A child can only narrow, through the real core and runner (FunctionModel): an agent's ``sessions_spawn`` of a
child whose policy is wider than its own is refused in ZeroClaw's words and launches nothing, a narrower child is
accepted, a bounded delegate spawns inside its caller's policy and an independent one inside its own, a child's ask
for a model the config does not name is dropped with a warning (its child runs on the default), and its asks for
more depth, more tools or a bigger budget are refused naming the rule."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from bot.core.runs.requests import SpawnRequest
from bot.records import RunStatus
from tests.core_support import (
    ORIGIN,
    ScriptedModels,
    chat_and_wait,
    first_prompt,
    running_core,
    settle,
    text,
    tool_returns,
)
from tests.db_views import run_statuses, spawned_agents
from tests.test_delegate import CONFIG as DELEGATING
from tests.test_delegate import NESTED, Caller

SERVER = Path(__file__).parent / "fakes" / "mcp_server.py"
DEFAULTS = """
[agents.defaults]
model = "test/main"
[agents.defaults.subagents]
max_spawn_depth = 2
allow_agents = ["*"]
"""
CALC = f"""
[mcp.servers.calc]
command = "{sys.executable}"
args = ["{SERVER}"]
timeout_seconds = 10
"""
MCP_TEAM = (
    DEFAULTS
    + CALC
    + """
[risk_profiles.careful]
excluded_tools = ["calc__die"]
[risk_profiles.careless]
[risk_profiles.tighter]
excluded_tools = ["calc__die", "calc__env"]
[agents.list.main]
mcp_servers = ["calc"]
[agents.list.boss]
model = "test/boss"
risk_profile = "careful"
mcp_servers = ["calc"]
[agents.list.tinker]
model = "test/worker"
risk_profile = "careless"
mcp_servers = ["calc"]
[agents.list.helper]
model = "test/worker"
risk_profile = "tighter"
mcp_servers = ["calc"]
"""
)
ESCALATES = "subagent policy override escalates beyond parent: "
NARROW_ONLY = "a child's tools, budget and depth are its agent's policy narrowed by yours"


def spawn(agent: str, **more) -> tuple[str, dict]:
    return ("sessions_spawn", {"task": f"work for {agent}", "agentId": agent, **more})


async def agents_spawned(core) -> list[str]:
    return await spawned_agents(core)


async def test_an_orchestrator_that_excludes_an_mcp_tool_cannot_spawn_an_agent_that_has_it(tmp_path):
    boss = Caller(spawn("tinker"), spawn("helper"))
    main = Caller(spawn("boss"))
    models = ScriptedModels(main=main, boss=boss, worker=text("worked"))
    async with running_core(tmp_path, models, MCP_TEAM) as core:
        await chat_and_wait(core)

        async def boss_spawned():
            return len(boss.results) == 2

        await settle(core, boss_spawned, timeout=20)
        launched = await agents_spawned(core)
    assert main.results[0]["status"] == "accepted"  # boss is narrower than main: it lists calc and excludes more
    assert boss.results[0] == {
        "status": "forbidden",
        "error": ESCALATES + 'subagent drops excluded_tools entry "calc__die" that the parent enforces',
    }
    assert boss.results[1]["status"] == "accepted"  # helper excludes calc__die too, and more
    assert launched == ["boss", "helper"]  # tinker never ran


async def test_a_bounded_delegates_spawn_subagent_child_gets_only_mcp_tools_the_delegates_caller_has(tmp_path):
    config = (
        DEFAULTS
        + CALC
        + (
            '[risk_profiles.team]\ndelegation_policy = { mode = "allow" }\nexcluded_tools = ["calc__die"]\n'
            "[risk_profiles.wide]\n[runtime_profiles.agentic]\nagentic = true\n"
            '[agents.list.main]\nrisk_profile = "team"\nmcp_servers = ["calc"]\ndelegates = ["analyst"]\n'
            '[agents.list.analyst]\nmodel = "test/analyst"\nrisk_profile = "wide"\nruntime_profile = "agentic"\n'
            'mcp_servers = ["calc"]\n'
        )
    )
    seen: list[list[str]] = []

    def analyst(messages, info):
        if first_prompt(messages).startswith("child:"):
            seen.append(sorted(tool.name for tool in info.function_tools))
            return ModelResponse(parts=[TextPart("child done")])
        if tool_returns(messages):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("spawn_subagent", {"prompt": "child: look"})])

    main = Caller(("delegate", {"agent": "analyst", "prompt": "a"}))
    async with running_core(tmp_path, ScriptedModels(main=main, analyst=analyst), config) as core:
        await chat_and_wait(core)
    assert main.results[0]["success"] is True
    assert "calc__add" in seen[0] and "calc__die" not in seen[0]  # its own wide profile has it; main's excludes it


async def test_a_bounded_delegate_spawns_inside_its_callers_policy_and_an_independent_one_inside_its_own(tmp_path):
    config = NESTED.replace("max_spawn_depth = 2", "max_spawn_depth = 3") + (
        '[agents.list.wideworker]\nmodel = "test/worker"\nrisk_profile = "wide"\n'
    )
    analyst, solo = Caller(spawn("wideworker")), Caller(spawn("wideworker"))
    main = Caller(("delegate", {"agent": "analyst", "prompt": "a"}), ("delegate", {"agent": "solo", "prompt": "b"}))
    models = ScriptedModels(main=main, analyst=analyst, solo=solo, worker=text("worked"))
    async with running_core(tmp_path, models, config) as core:
        await chat_and_wait(core)
        launched = await agents_spawned(core)
    assert analyst.results == [  # bounded: main's team profile excludes sessions_history, wideworker's does not
        {
            "status": "forbidden",
            "error": ESCALATES + 'subagent drops excluded_tools entry "sessions_history" that the parent enforces',
        }
    ]
    assert solo.results[0]["status"] == "accepted"  # independent: its own wide profile, exempt from main's
    assert launched == ["analyst", "solo", "wideworker"]


INJECTED = (
    DEFAULTS
    + """
[agents.list.main]
[agents.list.boss]
model = "test/boss"
[agents.list.helper]
model = "test/worker"
"""
)


@pytest.mark.parametrize(
    ("ask", "refusal"),
    [
        (
            spawn("boss", runTimeoutSeconds=600),
            {"status": "forbidden", "error": ESCALATES + "subagent run_timeout_seconds=600 exceeds parent's 60"},
        ),
        (
            spawn("boss", runTimeoutSeconds=0),
            {
                "status": "forbidden",
                "error": ESCALATES + "subagent run_timeout_seconds=0 (no limit) exceeds parent's 60",
            },
        ),
        *(
            (
                spawn("boss", **{key: value}),
                {
                    "status": "forbidden",
                    "error": f'sessions_spawn does not take "{key}": {NARROW_ONLY}, and a child can only narrow.',
                },
            )
            for key, value in (("tools", ["*"]), ("maxActionsPerHour", 1000), ("maxSpawnDepth", 5))
        ),
    ],
    ids=["longer-timeout", "no-timeout", "tools", "budget", "depth"],
)
async def test_a_childs_injected_asks_are_refused_naming_the_rule(tmp_path, ask, refusal):
    boss = Caller(ask)
    main = Caller(spawn("boss", runTimeoutSeconds=60))
    models = ScriptedModels(main=main, boss=boss, pricey=text("expensive"))
    async with running_core(tmp_path, models, INJECTED) as core:
        await chat_and_wait(core)

        async def boss_done():
            return await run_statuses(core, "spawn") == [RunStatus.COMPLETED]

        await settle(core, boss_done)
        launched = await agents_spawned(core)
    assert boss.results == [refusal]
    assert launched == ["boss"]


async def test_a_childs_ask_for_a_model_the_config_does_not_name_is_dropped_with_a_warning(tmp_path):
    answered: list[str] = []

    def answering(name: str):
        def answer(messages, info) -> ModelResponse:
            answered.append(name)
            return ModelResponse(parts=[TextPart(name)])

        return answer

    boss = Caller(spawn("helper", model="test/pricey"))
    main = Caller(spawn("boss", runTimeoutSeconds=60))
    models = ScriptedModels(main=main, boss=boss, worker=answering("worker"), pricey=answering("pricey"))
    async with running_core(tmp_path, models, INJECTED) as core:
        await chat_and_wait(core)

        async def both_done():
            return await run_statuses(core, "spawn") == [RunStatus.COMPLETED] * 2

        await settle(core, both_done)
        launched = await agents_spawned(core)
    [accepted] = boss.results
    assert accepted["status"] == "accepted"
    assert accepted["warning"] == (
        'Model "test/pricey" is not available; running on the default model test/worker. '
        "An agent may pick only a model the config names (test/boss, test/main, test/worker)."
    )
    assert launched == ["boss", "helper"]
    assert answered == ["worker"]


async def test_a_child_within_its_parents_time_and_models_is_accepted(tmp_path):
    boss = Caller(spawn("helper", runTimeoutSeconds=30, model="test/main"), spawn("helper"))
    main = Caller(spawn("boss", runTimeoutSeconds=60))
    models = ScriptedModels(main=main, boss=boss, worker=text("worked"))
    async with running_core(tmp_path, models, INJECTED) as core:
        await chat_and_wait(core)

        async def boss_spawned():
            return len(boss.results) == 2

        await settle(core, boss_spawned)
        launched = await agents_spawned(core)
    assert [result["status"] for result in boss.results] == ["accepted", "accepted"]
    assert launched == ["boss", "helper", "helper"]


async def test_spawn_subagent_and_delegate_refuse_asks_for_another_model_or_more_naming_the_rule(tmp_path):
    main = Caller(
        ("spawn_subagent", {"prompt": "x", "model": "test/pricey"}),
        ("delegate", {"agent": "researcher", "prompt": "x", "maxActionsPerHour": 1000}),
        ("delegate", {"agent": "researcher", "prompt": "x", "model": "test/pricey"}),
    )
    models = ScriptedModels(main=main, researcher=text("found"), pricey=text("expensive"))
    async with running_core(tmp_path, models, DELEGATING) as core:
        await chat_and_wait(core)
        launched = await agents_spawned(core)
    model_rule = "the child runs on the model the config gives it, and a child can only narrow."
    assert main.results == [
        f'spawn_subagent does not take "model": {model_rule}',
        {
            "success": False,
            "output": "",
            "error": f'delegate does not take "maxActionsPerHour": {NARROW_ONLY}, and a child can only narrow.',
        },
        {"success": False, "output": "", "error": f'delegate does not take "model": {model_rule}'},
    ]
    assert launched == []


async def test_a_persons_spawn_is_top_level_and_narrowed_by_no_agents_policy(tmp_path):
    config = INJECTED.replace("[agents.list.main]\n", '[agents.list.main]\nrisk_profile = "locked"\n') + (
        '[risk_profiles.locked]\nlevel = "supervised"\nallowed_tools = ["sessions_spawn"]\n'
    )
    main = Caller(spawn("helper"))
    models = ScriptedModels(main=main, worker=text("worked"), pricey=text("expensive"))
    asked = SpawnRequest(agent_id="helper", task="by a person", origin=ORIGIN, model="test/pricey")
    async with running_core(tmp_path, models, config) as core:
        accepted = await core.spawn(asked)
        await chat_and_wait(core)
        launched = await agents_spawned(core)
    assert accepted.agent_id == "helper"  # wider than main's locked profile, on a model of the person's choosing
    refusal = ESCALATES + "subagent autonomy=full exceeds parent's supervised"
    assert main.results == [{"status": "forbidden", "error": refusal}]  # the agent's own spawn of it is refused
    assert launched == ["helper"]
