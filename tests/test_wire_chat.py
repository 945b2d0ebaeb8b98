"""Mentions and DMs: the conversation's main agent answers, and remembers earlier turns across restarts."""

from __future__ import annotations

from tests.conftest import API_KEY


def echo_history(body: dict) -> str:
    """The fake model answers with every user turn it was sent, so the test sees what history it had."""
    said = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return "I have heard: " + " | ".join(said)


def replies_to(world, message):
    return lambda m: (m.get("message_reference") or {}).get("message_id") == message["id"]


async def test_mention_gets_an_answer_that_remembers_across_restart(world):
    world.llm.default = echo_history
    bot = await world.start_bot()

    first = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> my name is Ada")
    answer = await world.discord.wait_for_message(world.channel, replies_to(world, first))
    assert answer["content"] == "I have heard: my name is Ada"
    assert world.discord.message_meta(answer).allowed_mentions["parse"] == []

    await world.stop_bot(bot)
    await world.start_bot()

    second = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> who am I?")
    answer = await world.discord.wait_for_message(world.channel, replies_to(world, second))
    assert answer["content"] == "I have heard: my name is Ada | who am I?"
    assert world.llm.requests[-1]["headers"]["authorization"] == f"Bearer {API_KEY}"


async def test_messages_without_a_mention_are_ignored(world):
    await world.start_bot()
    await world.discord.send_user_message(world.alice, world.channel, "just chatting")
    marker = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> ping")
    await world.discord.wait_for_message(world.channel, replies_to(world, marker))

    assert len(world.llm.requests) == 1
    assert len(world.bot_messages()) == 1


async def test_dm_is_its_own_conversation(world):
    world.llm.default = echo_history
    await world.start_bot()
    dm = world.discord.add_dm_channel(world.alice)

    await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> channel secret")
    await world.discord.wait_for_message(world.channel, lambda m: m["content"].startswith("I have heard"))
    message = await world.discord.send_user_message(world.alice, dm, "hello in private")
    answer = await world.discord.wait_for_message(dm, replies_to(world, message))

    assert answer["content"] == "I have heard: hello in private"


async def test_model_failure_is_said_plainly(world):
    world.llm.error(401, "Incorrect API key provided")
    await world.start_bot()

    message = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> hi")
    answer = await world.discord.wait_for_message(world.channel, replies_to(world, message))

    assert answer["content"] == (
        "I couldn't answer: failed: model provider answered HTTP 401: Incorrect API key provided."
    )
