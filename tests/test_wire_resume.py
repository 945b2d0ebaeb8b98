"""A three-level run (a slash spawn → an orchestrator sub-agent that spawns → a worker that calls an MCP tool with a
side effect) survives SIGKILL of the bot process at several points: it resumes after the restart and completes, its
announcement appears once, no completed model request is sent again, the tool's effect happens once, no child is
spawned twice, and a steer sent before the kill reaches the model after it."""

from __future__ import annotations

import signal
from collections import Counter
from contextlib import asynccontextmanager

from tests.fakes.openai_server import Step
from tests.harness import QUICK_RECOVERY, announcement_for
from tests.polling import eventually
from tests.test_wire_approvals import approval_request, decide, recorded
from tests.test_wire_control import command, spawn
from tests.test_wire_delivery import start_bot_process
from tests.test_wire_mcp import with_mcp
from tests.test_wire_status import buttons

ORCHESTRATOR_TASK = "Orchestrate the survey"
WORKER_TASK = "Survey the field"
STEER = "Mind the budget"
COMMANDS = r"/guilds/\d+/commands$"


class Script:
    """The fake model's answers by conversation: the orchestrator spawns the worker, says it waits, then (woken by
    the worker's result) ends quoting it; the worker shouts through the MCP tool, then ends. A request named in
    ``hang_at`` (``(task, n)``: the n-th request of that conversation's turn chain) hangs the first time it comes."""

    def __init__(self, *hang_at: tuple[str, int]) -> None:
        self.hang_at = set(hang_at)
        self.seen: list[tuple[str, int]] = []
        self.bodies: list[dict] = []

    def __call__(self, body: dict) -> Step | str:
        messages = body["messages"]
        task = next(m["content"] for m in messages if m["role"] == "user")
        key = (task, sum(m["role"] == "assistant" for m in messages) + 1)
        self.seen.append(key)
        self.bodies.append(body)
        answer = self._answer(task, key[1], messages)
        if key in self.hang_at:
            self.hang_at.remove(key)
            return Step.hang(then=answer if isinstance(answer, Step) else Step.reply(answer))
        return answer

    def _answer(self, task: str, n: int, messages: list[dict]) -> Step | str:
        said = " | ".join(str(m["content"]) for m in messages if m["role"] == "user")
        if task == ORCHESTRATOR_TASK:
            if n == 1:
                return Step.calls([("sessions_spawn", {"task": WORKER_TASK})])
            return "Waiting for my worker." if n == 2 else f"Survey done: {'WORKER SAW THE STEER' in said}"
        if n == 1:
            return Step.calls([("calc__shout", {"text": "once"})])
        return "WORKER SAW THE STEER" if STEER in said else "Worker finished."

    def counts(self) -> Counter[tuple[str, int]]:
        return Counter(self.seen)


def three_levels(world, script: Script):
    calls = world.tmp_path / "calls.jsonl"
    with_mcp(world, calls)
    world.extra_config += "[agents.defaults.subagents]\nmax_spawn_depth = 2\n" + QUICK_RECOVERY
    world.llm.default = script
    return calls


@asynccontextmanager
async def killed_bot(world):
    """The bot as a process of its own, ready, then SIGKILLed when the block ends (and its gateway session gone)."""
    synced = len(world.discord.requests_matching("PUT", COMMANDS))
    process = await start_bot_process(world, world.tmp_path / f"bot-{synced}.log")
    try:
        await eventually(
            lambda: len(world.discord.requests_matching("PUT", COMMANDS)) > synced,
            timeout=30,
            describe=lambda: "the bot process to sync its commands",
        )
        await world.discord.wait_for_sessions(1, timeout=30)
        yield
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()
        await eventually(
            lambda: world.discord.connected_sessions == 0,
            timeout=10,
            describe=lambda: f"the killed process's gateway session to close ({world.discord.connected_sessions} open)",
        )


def statuses(world) -> list[tuple[str, int]]:
    return world.rows("SELECT r.status, s.depth FROM runs r JOIN sessions s ON s.key = r.session_key ORDER BY s.depth")


async def finished(world, run_id: str) -> dict:
    """The orchestrator's announcement, once everything settled and was delivered; it is the only one."""
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    await world.quiescent()
    assert [m for m in world.bot_messages() if announcement_for(run_id)(m)] == [announcement]
    assert statuses(world) == [("completed", 1), ("completed", 2)]  # and no second worker
    return announcement


async def test_killed_during_the_workers_request_after_its_tool_resumes_with_the_steer_and_one_shout(world):
    script = Script((WORKER_TASK, 2))
    calls = three_levels(world, script)
    async with killed_bot(world):
        run_id = await spawn(world, task=ORCHESTRATOR_TASK)
        await world.llm.wait_hanging(1, timeout=15)
        assert statuses(world) == [("waiting_children", 1), ("running", 2)]
        worker = world.rows("SELECT id FROM runs WHERE parent_run_id IS NOT NULL")[0][0]
        assert (await command(world, world.alice, "subagents steer", target=worker[:8], message=STEER)).startswith(
            "steered"
        )
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "once"}}]

    await world.start_bot()
    announcement = await finished(world, run_id)

    assert "Survey done: True" in announcement["content"]  # the worker's answer to the steer reached it
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "once"}}]
    assert script.counts() == {
        (ORCHESTRATOR_TASK, 1): 1,
        (ORCHESTRATOR_TASK, 2): 1,
        (ORCHESTRATOR_TASK, 3): 1,
        (WORKER_TASK, 1): 1,
        (WORKER_TASK, 2): 2,  # cut off by the kill, sent again
        (WORKER_TASK, 3): 1,  # the steer's turn
    }


async def test_killed_during_the_orchestrators_woken_turn_resumes_it_without_sending_anything_twice(world):
    script = Script((ORCHESTRATOR_TASK, 3))
    calls = three_levels(world, script)
    async with killed_bot(world):
        run_id = await spawn(world, task=ORCHESTRATOR_TASK)
        await world.llm.wait_hanging(1, timeout=15)
        assert statuses(world) == [("running", 1), ("completed", 2)]
        assert "Worker finished." in str(script.bodies[-1]["messages"][-1]["content"])

    await world.start_bot()
    announcement = await finished(world, run_id)

    assert "Survey done: False" in announcement["content"]
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "once"}}]
    assert script.counts() == {
        (ORCHESTRATOR_TASK, 1): 1,
        (ORCHESTRATOR_TASK, 2): 1,
        (ORCHESTRATOR_TASK, 3): 2,  # cut off by the kill, sent again
        (WORKER_TASK, 1): 1,
        (WORKER_TASK, 2): 1,
    }


async def test_killed_while_the_worker_awaits_approval_and_again_after_it_the_tool_runs_once(world):
    script = Script((WORKER_TASK, 2))
    calls = three_levels(world, script)
    world.extra_config += '[risk_profiles.careful]\nalways_ask = ["calc__shout"]\n'
    world.extra_config = 'risk_profile = "careful"\n' + world.extra_config
    async with killed_bot(world):
        run_id = await spawn(world, task=ORCHESTRATOR_TASK)
        request = await approval_request(world, lambda m: bool(buttons(m)))
        assert statuses(world) == [("waiting_children", 1), ("awaiting_approval", 2)]
    assert recorded(calls) == []

    async with killed_bot(world):
        assert statuses(world) == [("waiting_children", 1), ("awaiting_approval", 2)]
        approval_id = world.rows("SELECT id FROM approvals")[0][0]
        assert (await decide(world, world.alice, request, "approve", approval_id)).startswith("Approved `calc__shout`")
        await world.llm.wait_hanging(1, timeout=15)  # the woken worker's request after the tool
        assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "once"}}]

    await world.start_bot()
    announcement = await finished(world, run_id)

    assert "Survey done: False" in announcement["content"]
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "once"}}]
    assert script.counts() == {
        (ORCHESTRATOR_TASK, 1): 1,
        (ORCHESTRATOR_TASK, 2): 1,
        (ORCHESTRATOR_TASK, 3): 1,
        (WORKER_TASK, 1): 1,
        (WORKER_TASK, 2): 2,
    }


async def test_killed_during_the_orchestrators_request_after_its_spawn_keeps_its_one_worker(world):
    script = Script((ORCHESTRATOR_TASK, 2))
    calls = three_levels(world, script)
    async with killed_bot(world):
        run_id = await spawn(world, task=ORCHESTRATOR_TASK)
        await world.llm.wait_hanging(1, timeout=15)
        await world.until("SELECT status FROM runs WHERE parent_run_id IS NOT NULL", [("completed",)], timeout=15)
        assert statuses(world) == [("running", 1), ("completed", 2)]

    await world.start_bot()
    announcement = await finished(world, run_id)

    assert "Survey done: False" in announcement["content"]
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "once"}}]
    assert script.counts() == {
        (ORCHESTRATOR_TASK, 1): 1,
        (ORCHESTRATOR_TASK, 2): 2,  # cut off by the kill, sent again
        (ORCHESTRATOR_TASK, 3): 1,
        (WORKER_TASK, 1): 1,
        (WORKER_TASK, 2): 1,
    }
