"""``spawn_subagent`` seen from Discord: the channel gets the agent's answer built on its sub-agent's result, never
the sub-agent's own post, and ``/subagents list`` shows the sub-agent with its kind."""

from __future__ import annotations

import json

from tests.test_wire_control import command


async def test_an_agent_answers_with_its_subagents_result_and_the_list_shows_the_subagent(world):
    world.llm.tool_call("spawn_subagent", {"prompt": "Check that 6 x 7 is 42"})
    world.llm.reply("Checked: 6 x 7 is 42.")
    world.llm.reply("My sub-agent confirms it: 42.")
    await world.start_bot()

    asked = await world.discord.send_user_message(
        world.alice, world.channel, f"<@{world.discord.bot_user_id}> is it 42?"
    )
    reply = await world.discord.wait_for_message(
        world.channel, lambda m: (m.get("message_reference") or {}).get("message_id") == asked["id"]
    )
    assert reply["content"] == "My sub-agent confirms it: 42."
    child_request, final_request = world.llm.requests[1], world.llm.requests[2]
    assert child_request["messages"][-1] == {"role": "user", "content": "Check that 6 x 7 is 42"}
    assert not any("is it 42" in str(message.get("content")) for message in child_request["messages"])
    assert json.loads(final_request["messages"][-1]["content"]) == {
        "status": "completed",
        "output": "Checked: 6 x 7 is 42.",
    }
    await world.quiescent()
    posted = [m["content"] for m in world.discord.channel_messages(world.channel)]
    assert posted[-1] == reply["content"]
    assert not any("Checked: 6 x 7" in content for content in posted)  # the sub-agent itself posts nothing
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at") == [
        ("chat", "completed"),
        ("spawn", "completed"),
    ]
    assert world.rows("SELECT delegation, role FROM sessions WHERE kind = 'subagent'") == [("subagent", "leaf")]

    listing = await command(world, world.alice, "subagents list")
    assert "1. Check that 6 x 7 is 42 [subagent main] (fake/gpt-4o-mini" in listing
