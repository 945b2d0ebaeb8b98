"""Mentions and DMs: the conversation's main agent answers, and remembers earlier turns across restarts."""

from __future__ import annotations

from tests.fakes.openai_server import Step
from tests.harness import API_KEY, announcement_for
from tests.test_wire_control import spawn


def echo_history(body: dict) -> str:
    """The fake model answers with every user turn it was sent, so the test sees what history it had."""
    said = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return "I have heard: " + " | ".join(said)


def replies_to(world, message):
    return lambda m: (m.get("message_reference") or {}).get("message_id") == message["id"]


async def test_mention_gets_an_answer_that_remembers_across_restart(world):
    world.llm.default = echo_history
    bot = await world.start_bot()

    first = await world.discord.send_user_message(
        world.alice, world.channel, f"<@{world.discord.bot_user_id}> my name is Ada"
    )
    answer = await world.discord.wait_for_message(world.channel, replies_to(world, first))
    assert answer["content"] == "I have heard: my name is Ada"
    assert world.discord.message_meta(answer).allowed_mentions["parse"] == []

    await world.stop_bot(bot)
    await world.start_bot()

    second = await world.discord.send_user_message(
        world.alice, world.channel, f"<@{world.discord.bot_user_id}> who am I?"
    )
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
        "I couldn't answer: failed: model provider rejected the API key (401); check the key in TB_TEST_API_KEY "
        "(providers.fake.api_key_env)."
    )


def researcher_or_history(body: dict):
    """The researcher reports a finding; the main agent answers with every user-side message it was sent."""
    if "Subagent Context" in body["messages"][0]["content"]:
        return "Finding: the capital is Paris."
    return echo_history(body)


async def test_the_main_agent_knows_what_its_sub_agents_found_without_an_extra_turn(world):
    world.llm.default = researcher_or_history
    bot = await world.start_bot()
    run_id = await spawn(world, task="Find the capital")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    await world.quiescent()
    assert len(world.llm.requests) == 1  # the result reached the main session without starting a turn

    question = await world.discord.send_user_message(
        world.alice, world.channel, f"<@{world.discord.bot_user_id}> what did the researcher find?"
    )
    answer = (await world.discord.wait_for_message(world.channel, replies_to(world, question)))["content"]
    assert answer == "I have heard:  | what did the researcher find?"  # the context itself is never posted
    context, asked = [m["content"] for m in world.llm.requests[-1]["messages"] if m["role"] == "user"]
    assert "Finding: the capital is Paris." in context and "already posted to the user" in context
    assert asked == "what did the researcher find?"

    await world.stop_bot(bot)
    await world.start_bot()
    again = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> again?")
    await world.discord.wait_for_message(world.channel, replies_to(world, again))
    sent = world.llm.requests[-1]["messages"]
    assert sum("Finding: the capital is Paris." in m["content"] for m in sent if m["role"] == "user") == 1


async def test_a_result_that_arrives_during_a_main_turn_joins_the_history_after_it(world):
    world.llm.enqueue(Step.hang(then=Step.calls([("agents_list", {})])))
    world.llm.default = researcher_or_history
    await world.start_bot()
    question = await world.discord.send_user_message(
        world.alice, world.channel, f"<@{world.discord.bot_user_id}> think it over"
    )
    await world.llm.wait_hanging(1)
    run_id = await spawn(world, task="Find the capital")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert world.rows("SELECT COUNT(*) FROM run_inbox WHERE status = 'pending'") == [(1,)]

    world.llm.release()
    await world.discord.wait_for_message(world.channel, replies_to(world, question))
    await world.quiescent()
    turn = [r for r in world.llm.requests if "Subagent Context" not in r["messages"][0]["content"]]
    assert len(turn) == 2 and all("Finding" not in str(r["messages"]) for r in turn)  # the turn went on unaltered
    assert world.rows("SELECT COUNT(*) FROM run_inbox WHERE status = 'pending'") == [(0,)]

    later = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> so?")
    await world.discord.wait_for_message(world.channel, replies_to(world, later))
    users = [m["content"] for m in world.llm.requests[-1]["messages"] if m["role"] == "user"]
    assert users[0] == "think it over" and "Finding: the capital is Paris." in users[1] and users[2] == "so?"


async def test_a_result_waiting_for_a_main_turn_survives_a_restart_that_interrupts_the_turn(world):
    world.llm.enqueue(Step.hang())
    world.llm.default = researcher_or_history
    bot = await world.start_bot()
    await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> think it over")
    await world.llm.wait_hanging(1)
    run_id = await spawn(world, task="Find the capital")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert world.rows("SELECT COUNT(*) FROM run_inbox WHERE status = 'pending'") == [(1,)]

    await world.stop_bot(bot)  # the main turn is cut short by the restart
    await world.start_bot()
    await world.until("SELECT COUNT(*) FROM run_inbox WHERE status = 'pending'", [(0,)])

    later = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> so?")
    await world.discord.wait_for_message(world.channel, replies_to(world, later))
    users = [m["content"] for m in world.llm.requests[-1]["messages"] if m["role"] == "user"]
    assert sum("Finding: the capital is Paris." in text for text in users) == 1 and users[-1] == "so?"
