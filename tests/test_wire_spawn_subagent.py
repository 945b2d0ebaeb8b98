"""``spawn_subagent`` seen from Discord: the channel gets the agent's answer built on its sub-agent's result, never
the sub-agent's own post, and ``/subagents list`` shows the sub-agent with its kind. The model reads the tool's
answer as bare text: the child's final text, a placeholder when it is empty, or a refusal's words."""

from __future__ import annotations

from typing import Any

from bot.agents.models import ModelFactory
from tests.fakes.openai_server import Step
from tests.test_wire_control import command

EMPTY_PROMPT = "Missing or empty 'prompt' parameter"
DEPTH_CAP = "spawn_subagent: a subagent may not spawn its own subagents (depth-1 cap)"


def tool_message(request: dict[str, Any]) -> dict[str, Any]:
    """The last message of a request to the model: the tool's answer it reads."""
    return request["messages"][-1]


async def ask(world, text: str) -> dict:
    """Alice mentions the bot; the main agent's reply."""
    asked = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> {text}")
    return await world.discord.wait_for_message(
        world.channel, lambda m: (m.get("message_reference") or {}).get("message_id") == asked["id"]
    )


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
    assert tool_message(final_request)["role"] == "tool"
    assert tool_message(final_request)["content"] == "Checked: 6 x 7 is 42."
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


async def test_a_child_that_answers_nothing_is_read_as_the_placeholder(world):
    world.llm.tool_call("spawn_subagent", {"prompt": "Say nothing"})
    world.llm.reply("")
    world.llm.reply("It had nothing to say.")
    await world.start_bot()

    reply = await ask(world, "try it")

    assert reply["content"] == "It had nothing to say."
    assert tool_message(world.llm.requests[2])["content"] == "subagent completed without output"


async def test_the_prompt_is_checked_before_the_depth_cap_and_each_refusal_is_read_as_its_words(world):
    """A child may not spawn its own, but an empty prompt is refused first, for what it is."""
    world.llm.tool_call("spawn_subagent", {"prompt": "Go"})  # the main agent
    world.llm.tool_call("spawn_subagent", {"prompt": "   "})  # its child
    world.llm.tool_call("spawn_subagent", {"prompt": "Deeper"})
    world.llm.reply("I could not go deeper.")
    world.llm.reply("Done.")
    await world.start_bot()

    reply = await ask(world, "go")

    assert reply["content"] == "Done."
    empty, deeper, child = (tool_message(world.llm.requests[n])["content"] for n in (2, 3, 4))
    assert (empty, deeper, child) == (EMPTY_PROMPT, DEPTH_CAP, "I could not go deeper.")
    await world.quiescent()
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at") == [
        ("chat", "completed"),
        ("spawn", "completed"),
    ]


async def test_a_child_that_cannot_be_built_is_read_as_a_spawn_failure_and_nothing_runs(world, monkeypatch):
    broken: list[bool] = []
    chain = ModelFactory.chain

    def breaking_chain(self, reference: str, *, agent: str):
        if broken:
            raise RuntimeError("the provider's client could not be created")
        return chain(self, reference, agent=agent)

    def main_asks(body) -> Step:
        broken.append(True)  # from now on no model can be built: the main agent's turn already has its own
        return Step.calls([("spawn_subagent", {"prompt": "Check it"})])

    monkeypatch.setattr(ModelFactory, "chain", breaking_chain)
    world.llm.respond_with(main_asks)
    world.llm.reply("My sub-agent could not start.")
    await world.start_bot()

    reply = await ask(world, "check it")

    assert reply["content"] == "My sub-agent could not start."
    assert tool_message(world.llm.requests[1])["content"] == (
        "subagent spawn failed: the provider's client could not be created"
    )
    await world.quiescent()
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at") == [("chat", "completed")]
    assert world.rows("SELECT COUNT(*) FROM sessions WHERE delegation = 'subagent'") == [(0,)]
