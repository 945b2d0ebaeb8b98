"""What a run reports when the model's last word is empty or malformed, over the wire: empty answers complete
(with the last tool result, or ``(no output)``), and a model that keeps sending broken tool calls fails in
words a user can read."""

from __future__ import annotations

from tests.fakes.openai_server import Step
from tests.harness import announcement_for, spawned_run_id
from tests.test_wire_control import command

ORCHESTRATOR = "[agents.defaults.subagents]\nmax_spawn_depth = 2\n"


async def spawned_announcement(world, task="Look around") -> tuple[str, dict]:
    answer = await command(world, world.alice, "subagents spawn", agent="researcher", task=task)
    run_id = spawned_run_id({"content": answer})
    return run_id, await world.discord.wait_for_message(world.channel, announcement_for(run_id))


async def test_an_empty_answer_after_tool_work_completes_with_the_last_tool_result(world):
    world.extra_config = ORCHESTRATOR
    world.llm.enqueue(Step.calls([("sessions_list", {})]), Step.reply(""), Step.reply(""))
    await world.start_bot()

    run_id, announcement = await spawned_announcement(world)

    assert f"(run `{run_id}`): completed successfully" in announcement["content"]
    assert '{"sessions":[]}' in announcement["content"]
    assert world.rows("SELECT status, error FROM runs") == [("completed", None)]
    assert len(world.llm.requests) == 2  # the empty answer ended the run; it was not retried


async def test_a_plain_empty_answer_completes_with_no_output(world):
    world.llm.enqueue(Step.reply(""), Step.reply(""))
    await world.start_bot()

    run_id, announcement = await spawned_announcement(world)

    assert f"(run `{run_id}`): completed successfully\n(no output)" in announcement["content"]
    assert world.rows("SELECT status, result_text FROM runs") == [("completed", "(no output)")]
    assert len(world.llm.requests) == 1


async def test_repeated_malformed_tool_calls_fail_in_plain_words(world):
    world.extra_config = ORCHESTRATOR
    broken = Step.calls([("sessions_spawn", '{"task": "half a json')])
    world.llm.enqueue(broken, Step.calls([("sessions_spawn", '{"task": "half a json')]))
    await world.start_bot()

    run_id, announcement = await spawned_announcement(world)

    assert (
        f"(run `{run_id}`): failed: the model sent an invalid call to sessions_spawn twice" in (announcement["content"])
    )
    assert "pydantic" not in announcement["content"] and "retry limit" not in announcement["content"]
    assert "(no output)" in announcement["content"] and "half a json" not in announcement["content"]
    assert world.rows("SELECT status, error FROM runs") == [
        ("failed", "the model sent an invalid call to sessions_spawn twice")
    ]
