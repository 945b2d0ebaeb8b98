"""``spawn_subagent`` through the real core and runner (FunctionModel): the calling agent waits for an ephemeral
run of itself and gets its final text, bare; nothing is announced for the child, its turns stay out of the caller's
history, and every guard refuses in ZeroClaw's order and words (reference/zeroclaw.md §1), read as bare text."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart

from bot.core.errors import EphemeralSession
from bot.core.runs.requests import ChatRequest, SpawnRequest
from bot.core.tools.action_budget import BUDGET_EXHAUSTED
from bot.core.tools.subagent_spawn import DEPTH_CAP, EMPTY_PROMPT, NO_OUTPUT_RESULT, READ_ONLY, SPAWN_FAILED
from bot.records import RunStatus
from tests.core_support import (
    ORIGIN,
    ScriptedModels,
    chat_and_wait,
    first_prompt,
    running_core,
    settle,
)
from tests.db_views import outbox_payloads

CONFIG = """
[agents.defaults]
model = "test/main"
[agents.list.main]
"""
MAIN_KEY = "agent:main:discord:channel:100"
RISK_REFUSAL = "spawn_subagent: refused — agent 'main' risk_profile does not list spawn_subagent in allowed_tools"


class Agent:
    """One model for the caller and its children: a child is the run whose first prompt is a child prompt."""

    def __init__(self, calls: list[dict], child_reply: str = "child answer", child_calls: list[dict] | None = None):
        self.calls = calls
        self.child_reply = child_reply
        self.child_calls = child_calls or []
        self.results: list[dict] = []
        self.child_results: list[dict] = []
        self.child_tools: list[str] = []

    def __call__(self, messages: list[ModelMessage], info) -> ModelResponse:
        returns = [p for p in messages[-1].parts if p.part_kind == "tool-return"]
        if first_prompt(messages).startswith("child:"):
            self.child_tools = sorted(t.name for t in info.function_tools)
            self.child_results += [p.content for p in returns]
            if len(self.child_results) < len(self.child_calls):
                return ModelResponse(parts=[ToolCallPart("spawn_subagent", self.child_calls[len(self.child_results)])])
            return ModelResponse(parts=[TextPart(self.child_reply)])
        self.results += [p.content for p in returns]
        if len(self.results) < len(self.calls):
            return ModelResponse(parts=[ToolCallPart("spawn_subagent", self.calls[len(self.results)])])
        return ModelResponse(parts=[TextPart(f"main says: {self.results[-1] if self.results else None}")])


async def test_the_caller_gets_its_childs_answer_and_only_the_caller_is_announced(tmp_path):
    agent = Agent([{"prompt": "  child: sum it up  "}])
    async with running_core(tmp_path, ScriptedModels(main=agent), CONFIG) as core:
        main_run = await core.runs.get(await chat_and_wait(core))
        rows = await core.core.queries.children(MAIN_KEY)
        child_session = rows[0].session

        async def archived():
            return (await core.sessions.get(child_session.key)).archived_at is not None

        await settle(core, archived)
        payloads = await outbox_payloads(core)
        history = await core.transcripts.history(MAIN_KEY)

    assert agent.results == ["child answer"]
    assert [p["body"] for p in payloads] == ["main says: child answer"]
    child = rows[0].run
    assert (child.task, child.status, child.parent_run_id, child.model) == (
        "child: sum it up",
        RunStatus.COMPLETED,
        main_run.id,
        main_run.model,
    )
    assert (child_session.delegation, child_session.role, child_session.agent_id) == ("subagent", "leaf", "main")
    prompts = [
        p.content for m in history if isinstance(m, ModelRequest) for p in m.parts if p.part_kind == "user-prompt"
    ]
    assert not any("child:" in str(prompt) for prompt in prompts)  # its turns never enter the caller's history
    assert agent.child_tools == ["spawn_subagent"]


async def test_a_child_cannot_spawn_its_own(tmp_path):
    agent = Agent([{"prompt": "child: go"}], child_reply="stopped", child_calls=[{"prompt": "child: deeper"}])
    async with running_core(tmp_path, ScriptedModels(main=agent), CONFIG) as core:
        await chat_and_wait(core)
        assert len(await core.core.queries.children(MAIN_KEY)) == 1
    assert agent.child_results == [DEPTH_CAP]
    assert agent.results == ["stopped"]


async def test_a_child_that_answers_nothing_is_named_so(tmp_path):
    agent = Agent([{"prompt": "child: go"}], child_reply="")
    async with running_core(tmp_path, ScriptedModels(main=agent), CONFIG) as core:
        await chat_and_wait(core)
    assert agent.results == [NO_OUTPUT_RESULT]


@pytest.mark.parametrize(
    ("extra", "calls", "results"),
    [
        ("", [{"prompt": "   "}, {}], [EMPTY_PROMPT] * 2),
        (  # the prompt is checked before the risk gate
            '[risk_profiles.narrow]\nexcluded_tools = ["spawn_subagent"]\n',
            [{"prompt": ""}, {"prompt": "child: x"}],
            [EMPTY_PROMPT, RISK_REFUSAL],
        ),
        (
            '[risk_profiles.narrow]\nallowed_tools = ["sessions_list"]\n',
            [{"prompt": "child: x"}],
            [RISK_REFUSAL],
        ),
        (
            '[risk_profiles.narrow]\nlevel = "readonly"\n',
            [{"prompt": "child: x"}],
            [READ_ONLY],
        ),
        (  # a refused call costs no budget; the one launch allowed per hour does
            "[runtime_profiles.narrow]\nmax_actions_per_hour = 1\n",
            [{"prompt": " "}, {"prompt": "child: a"}, {"prompt": "child: b"}],
            [EMPTY_PROMPT, "child answer", BUDGET_EXHAUSTED],
        ),
        (
            "[runtime_profiles.narrow]\nmax_actions_per_hour = 0\n",
            [{"prompt": "child: a"}],
            [BUDGET_EXHAUSTED],
        ),
    ],
)
async def test_each_guard_refuses_in_zeroclaws_words(tmp_path, extra, calls, results):
    profile = "risk_profile" if "risk_profiles" in extra else "runtime_profile"
    config = CONFIG + (f'{profile} = "narrow"\n' + extra if extra else "")
    agent = Agent(calls)
    async with running_core(tmp_path, ScriptedModels(main=agent), config) as core:
        await chat_and_wait(core)
        launched = len(await core.core.queries.children(MAIN_KEY))
    assert agent.results == results
    assert launched == results.count("child answer")


async def test_killing_the_caller_stops_the_child_and_announces_nothing(tmp_path):
    child_started = asyncio.Event()

    async def model(messages: list[ModelMessage], info) -> ModelResponse:
        if first_prompt(messages).startswith("child:"):
            child_started.set()
            await asyncio.Event().wait()  # works until killed
        return ModelResponse(parts=[ToolCallPart("spawn_subagent", {"prompt": "child: forever"})])

    async with running_core(tmp_path, ScriptedModels(main=model), CONFIG) as core:
        main_run_id = await core.chat(ChatRequest(text="go", origin=ORIGIN))
        await asyncio.wait_for(child_started.wait(), 10)
        child = (await core.core.queries.children(MAIN_KEY))[0].run
        assert child.status is RunStatus.RUNNING
        stopped = await core.core.commands.kill(main_run_id)

        async def both_killed():
            runs = [await core.runs.get(main_run_id), await core.runs.get(child.id)]
            return all(run.status is RunStatus.KILLED for run in runs)

        await settle(core, both_killed)
        await core.core.dispatch.wait_idle()
        payloads = await outbox_payloads(core)
    assert {run.id for run in stopped} == {main_run_id, child.id}
    assert payloads == []


async def test_a_sub_agent_in_the_only_lane_slot_still_gets_its_childs_answer(tmp_path):
    """The child runs inside its caller's turn: it does not wait for a lane slot its caller holds."""
    worker = Agent([{"prompt": "child: part"}])

    def main(messages: list[ModelMessage], info) -> ModelResponse:
        if any(p.part_kind == "tool-return" for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("spawned")])
        return ModelResponse(parts=[ToolCallPart("sessions_spawn", {"task": "work", "agentId": "worker"})])

    config = CONFIG + (
        '[agents.list.worker]\nmodel = "test/worker"\n'
        "[agents.defaults.subagents]\nmax_concurrent = 1\nmax_spawn_depth = 2\nallow_agents = ['*']\n"
    )
    async with running_core(tmp_path, ScriptedModels(main=main, worker=worker), config) as core:
        await chat_and_wait(core)

        async def worker_done():
            rows = await core.core.queries.children(MAIN_KEY)
            return rows and rows[0].run.status is RunStatus.COMPLETED

        await settle(core, worker_done)
    assert worker.results == ["child answer"]


async def test_a_child_interrupted_by_a_restart_is_not_announced_and_its_caller_is(tmp_path):
    started = asyncio.Event()

    async def first_life(messages: list[ModelMessage], info) -> ModelResponse:
        if first_prompt(messages).startswith("child:"):
            started.set()
            await asyncio.Event().wait()  # the process dies while the child works
        return ModelResponse(parts=[ToolCallPart("spawn_subagent", {"prompt": "child: long"})])

    async with running_core(tmp_path, ScriptedModels(main=first_life), CONFIG) as core:
        await core.chat(ChatRequest(text="go", origin=ORIGIN))
        await asyncio.wait_for(started.wait(), 10)
    async with running_core(tmp_path, ScriptedModels(main=first_life), CONFIG) as core:
        child = (await core.core.queries.children(MAIN_KEY))[0]

        async def child_archived():
            return (await core.sessions.get(child.session.key)).archived_at is not None

        await settle(core, child_archived)
        payloads = await outbox_payloads(core)
    assert child.run.status is RunStatus.INTERRUPTED
    assert [(p["kind"], p["status"]) for p in payloads] == [("reply", "interrupted")]


async def test_a_child_killed_while_its_caller_waits_fails_the_call_and_is_archived(tmp_path):
    started = asyncio.Event()
    seen: list[object] = []

    async def model(messages: list[ModelMessage], info) -> ModelResponse:
        if first_prompt(messages).startswith("child:"):
            started.set()
            await asyncio.Event().wait()
        returns = [p.content for p in messages[-1].parts if p.part_kind == "tool-return"]
        if returns:
            seen.extend(returns)
            return ModelResponse(parts=[TextPart("went on without it")])
        return ModelResponse(parts=[ToolCallPart("spawn_subagent", {"prompt": "child: long"})])

    async with running_core(tmp_path, ScriptedModels(main=model), CONFIG) as core:
        main_run_id = await core.chat(ChatRequest(text="go", origin=ORIGIN))
        await asyncio.wait_for(started.wait(), 10)
        child = (await core.core.queries.children(MAIN_KEY))[0]
        assert [run.id for run in await core.core.commands.kill(child.run.id)] == [child.run.id]

        async def caller_done():
            run = await core.runs.get(main_run_id)
            archived = (await core.sessions.get(child.session.key)).archived_at is not None
            return run.status is RunStatus.COMPLETED and archived

        await settle(core, caller_done)
    assert seen == ["subagent run failed: killed"]


async def test_the_prompt_is_checked_before_the_read_only_level(tmp_path):
    """(The depth cap cannot be ordered against the risk gate here: a child shares its caller's risk profile, so
    a profile that refuses the child refused its caller first.)"""
    config = CONFIG + 'risk_profile = "narrow"\n[risk_profiles.narrow]\nlevel = "readonly"\n'
    agent = Agent([{"prompt": " "}])
    async with running_core(tmp_path, ScriptedModels(main=agent), config) as core:
        await chat_and_wait(core)
    assert agent.results == [EMPTY_PROMPT]


async def test_an_empty_final_answer_after_tool_calls_is_named_not_replaced_by_a_tool_result(tmp_path):
    agent = Agent([{"prompt": "child: go"}], child_reply="", child_calls=[{"prompt": "child: deeper"}])
    async with running_core(tmp_path, ScriptedModels(main=agent), CONFIG) as core:
        await chat_and_wait(core)
    assert agent.child_results == [DEPTH_CAP]
    assert agent.results == [NO_OUTPUT_RESULT]


async def test_a_child_takes_no_follow_up_from_anyone(tmp_path):
    agent = Agent([{"prompt": "child: go"}])
    async with running_core(tmp_path, ScriptedModels(main=agent), CONFIG) as core:
        await chat_and_wait(core)
        child = (await core.core.queries.children(MAIN_KEY))[0]
        with pytest.raises(EphemeralSession, match="is a spawn_subagent run: it answers only the agent"):
            await core.core.commands.follow_up(child.session, "and now?", child.run)
        assert len(await core.runs.for_session(child.session.key)) == 1


async def test_a_child_whose_caller_timed_out_is_stopped_and_archived(tmp_path):
    def main(messages: list[ModelMessage], info) -> ModelResponse:
        if any(p.part_kind == "tool-return" for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("spawned")])
        spawn = {"task": "work", "agentId": "worker", "runTimeoutSeconds": 1}
        return ModelResponse(parts=[ToolCallPart("sessions_spawn", spawn)])

    async def worker(messages: list[ModelMessage], info) -> ModelResponse:
        if first_prompt(messages).startswith("child:"):
            await asyncio.Event().wait()  # outlives its caller's deadline
        return ModelResponse(parts=[ToolCallPart("spawn_subagent", {"prompt": "child: slow"})])

    config = CONFIG + (
        '[agents.list.worker]\nmodel = "test/worker"\n'
        "[agents.defaults.subagents]\nmax_spawn_depth = 2\nallow_agents = ['*']\n"
    )
    async with running_core(tmp_path, ScriptedModels(main=main, worker=worker), config) as core:
        await chat_and_wait(core)
        worker_row = (await core.core.queries.children(MAIN_KEY))[0]

        async def child_stopped():
            children = await core.core.queries.children(worker_row.session.key)
            if not children or children[0].run.status is not RunStatus.KILLED:
                return None
            return children[0] if (await core.sessions.get(children[0].session.key)).archived_at else None

        await settle(core, child_stopped)
        assert (await core.runs.get(worker_row.run.id)).status is RunStatus.TIMED_OUT


async def test_parallel_tools_lets_two_children_run_together_and_by_default_they_run_in_turn(tmp_path):
    async def run_with(extra: str) -> list[str]:
        events: list[str] = []
        started = {"child: a": asyncio.Event(), "child: b": asyncio.Event()}

        async def model(messages: list[ModelMessage], info) -> ModelResponse:
            prompt = first_prompt(messages)
            if prompt.startswith("child:"):
                events.append(f"{prompt} started")
                started[prompt].set()
                if extra:  # each waits for the other: only possible when they run together, whichever starts first
                    other = "child: b" if prompt == "child: a" else "child: a"
                    await asyncio.wait_for(started[other].wait(), 10)
                events.append(f"{prompt} ended")
                return ModelResponse(parts=[TextPart(prompt)])
            if any(p.part_kind == "tool-return" for p in messages[-1].parts):
                return ModelResponse(parts=[TextPart("both done")])
            calls = [ToolCallPart("spawn_subagent", {"prompt": f"child: {name}"}) for name in ("a", "b")]
            return ModelResponse(parts=calls)

        config = CONFIG + ('runtime_profile = "fast"\n' + extra if extra else "")
        async with running_core(tmp_path / str(bool(extra)), ScriptedModels(main=model), config) as core:
            run = await core.runs.get(await chat_and_wait(core))
            assert run.result_text == "both done"
        return events

    assert await run_with("") == ["child: a started", "child: a ended", "child: b started", "child: b ended"]
    together = await run_with("[runtime_profiles.fast]\nparallel_tools = true\n")
    assert sorted(together[:2]) == ["child: a started", "child: b started"]  # both before either ended


async def test_a_running_child_does_not_count_against_the_members_cap(tmp_path):
    """The member's own /subagents spawn is not refused because their conversation's agent has a child running."""
    release = asyncio.Event()

    async def main(messages: list[ModelMessage], info) -> ModelResponse:
        if first_prompt(messages).startswith("child:"):
            await asyncio.wait_for(release.wait(), 10)
            return ModelResponse(parts=[TextPart("child done")])
        if any(p.part_kind == "tool-return" for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("ok")])
        return ModelResponse(parts=[ToolCallPart("spawn_subagent", {"prompt": "child: meanwhile"})])

    config = "[discord]\nmax_active_runs_per_member = 1\n" + CONFIG
    async with running_core(tmp_path, ScriptedModels(main=main), config) as core:
        await core.chat(ChatRequest(text="go", origin=ORIGIN))

        async def child_running():
            rows = await core.core.queries.children(MAIN_KEY)
            return rows and rows[0].run.status is RunStatus.RUNNING

        await settle(core, child_running)
        accepted = await core.spawn(SpawnRequest(agent_id="main", task="mine", origin=ORIGIN))
        release.set()
    assert accepted.agent_id == "main"


class BreakingModels(ScriptedModels):
    """Models that stop resolving once ``broken`` is set, but for ``spare`` more: a fault outside the model call."""

    broken = False
    spare = 0

    def resolve(self, reference: str, agent: str | None = None):
        if self.broken:
            if self.spare == 0:
                raise RuntimeError("the model registry broke")
            self.spare -= 1
        return super().resolve(reference, agent)


async def test_a_child_whose_run_crashes_fails_and_its_caller_is_told(tmp_path):
    def main(messages: list[ModelMessage], info) -> ModelResponse:
        returns = [p for p in messages[-1].parts if p.part_kind == "tool-return"]
        if returns:
            return ModelResponse(parts=[TextPart(f"main says: {returns[0].content}")])
        models.broken, models.spare = True, 1  # the launch's check builds it once; the child's run cannot
        return ModelResponse(parts=[ToolCallPart("spawn_subagent", {"prompt": "child: x"})])

    models = BreakingModels(main=main)
    async with running_core(tmp_path, models, CONFIG) as core:
        main_run = await core.runs.get(await chat_and_wait(core))
        child = (await core.core.queries.children(MAIN_KEY))[0].run
        payloads = await outbox_payloads(core)
    assert (child.status, child.error) == (RunStatus.FAILED, "internal error (RuntimeError)")
    assert main_run.status is RunStatus.COMPLETED
    assert [p["body"] for p in payloads] == ["main says: subagent run failed: internal error (RuntimeError)"]


async def test_a_child_whose_model_cannot_be_built_is_not_launched_and_costs_no_action(tmp_path):
    def main(messages: list[ModelMessage], info) -> ModelResponse:
        returns = [p for p in messages[-1].parts if p.part_kind == "tool-return"]
        if returns:
            return ModelResponse(parts=[TextPart(f"main says: {returns[0].content}")])
        models.broken = True  # from here no model can be built
        return ModelResponse(parts=[ToolCallPart("spawn_subagent", {"prompt": "child: x"})])

    models = BreakingModels(main=main)
    async with running_core(tmp_path, models, CONFIG) as core:
        main_run = await core.runs.get(await chat_and_wait(core))
        children = await core.core.queries.children(MAIN_KEY)
        charged = await core.sessions.charged_since(MAIN_KEY, 0)
    assert main_run.result_text == f"main says: {SPAWN_FAILED}the model registry broke"
    assert (children, charged) == ([], 0)
