"""Work a run did is kept however it ends: a killed or interrupted run keeps its partial output and every
token it spent, shown in ``list``, ``info`` and its status message; an interrupted main-agent turn says what it
had so far."""

from __future__ import annotations

from tests.fakes.openai_server import Step
from tests.harness import QUICK_STATUS_EDITS, answer_to
from tests.test_wire_control import command, spawn
from tests.test_wire_status import status_for

ORCHESTRATOR = "[agents.defaults.subagents]\nmax_spawn_depth = 2\n"


async def test_a_killed_run_keeps_its_partial_output_and_its_tokens(world):
    world.extra_config = ORCHESTRATOR
    world.status_edit_interval = QUICK_STATUS_EDITS
    world.llm.enqueue(
        Step.calls(
            [("sessions_list", {})], text="Found two sources so far.", prompt_tokens=1200, completion_tokens=300
        ),
        Step.hang(),
    )
    await world.start_bot()
    run_id = await spawn(world, task="Collect sources")
    await world.llm.wait_hanging(1)
    assert world.rows("SELECT status, input_tokens, output_tokens FROM runs") == [("running", 1200, 300)]
    await status_for(world, run_id, lambda m: "running" in m["content"])

    assert await command(world, world.alice, "subagents kill", target="1") == "killed Collect sources."

    listing = await command(world, world.alice, "subagents list")
    assert "tokens 1.5k (in 1.2k / out 300)) killed" in listing, listing
    info = await command(world, world.alice, "subagents info", target="1")
    assert "Outcome: killed (killed)" in info and "Result: Found two sources so far." in info, info
    final = await status_for(world, run_id, lambda m: "killed" in m["content"])
    assert "tokens 1.5k" in final["content"], final["content"]
    await world.quiescent()
    assert world.rows("SELECT status, input_tokens, output_tokens, requests, result_text FROM runs") == [
        ("killed", 1200, 300, 1, "Found two sources so far.")
    ]


async def test_a_killed_run_with_only_tool_calls_reports_how_many_it_made(world):
    world.extra_config = ORCHESTRATOR
    world.llm.enqueue(Step.calls([("sessions_list", {}), ("agents_list", {})]), Step.hang())
    await world.start_bot()
    await spawn(world, task="Look around")
    await world.llm.wait_hanging(1)

    await command(world, world.alice, "subagents kill", target="1")

    info = await command(world, world.alice, "subagents info", target="1")
    assert "Result: [Partial progress: 2 tool call(s) executed before the run was killed]" in info, info


async def test_an_interrupted_main_agent_turn_reports_what_it_had_and_keeps_its_tokens(world):
    world.extra_config = "[durability]\nresume_interrupted = false"  # the run is interrupted, not resumed
    world.llm.enqueue(
        Step.calls(
            [("agents_list", {})],
            text="Two agents can help: main and researcher.",
            prompt_tokens=900,
            completion_tokens=100,
        ),
        Step.hang(),
    )
    bot = await world.start_bot()
    asked = await world.discord.send_user_message(
        world.alice, world.channel, f"<@{world.discord.bot_user_id}> who can help?"
    )
    await world.llm.wait_hanging(1)
    await world.stop_bot(bot)  # the turn is still running when the bot goes away
    assert world.rows("SELECT status, input_tokens FROM runs") == [("running", 900)]

    await world.start_bot()
    reply = await world.discord.wait_for_message(world.channel, answer_to(asked))

    assert reply["content"] == (
        "I was restarted before I could finish answering this. What I had so far:\n\n"
        "Two agents can help: main and researcher."
    )
    assert world.rows("SELECT status, input_tokens, output_tokens FROM runs") == [("interrupted", 900, 100)]
