"""The locks taken per session, conversation and caller leave no trace once nobody holds or waits for them: a
person's spawns, an agent's ``sessions_spawn`` and ``spawn_subagent``, main-agent turns and bound-thread posts in
many conversations leave every lock table empty (a lock kept per key ever seen would grow with each)."""

from __future__ import annotations

from bot.app import ThreadboundBot
from tests.fakes.openai_server import Step
from tests.harness import answer_to
from tests.polling import eventually
from tests.test_wire_control import command
from tests.test_wire_threads import THREADS_ON


def lock_tables(bot: ThreadboundBot) -> dict[str, int]:
    """How many keys each lock table holds now."""
    orchestrator = bot.orchestrator
    return {
        "spawn": len(orchestrator.core.spawning._spawn_locks),
        "session turns": len(orchestrator.core.execution._lanes._session_locks),
        "action budget": len(orchestrator.core.tools._subagent_spawn._budget._charging),
        "persona webhooks": len(bot._persona._creating),
    }


EMPTY = {"spawn": 0, "session turns": 0, "action budget": 0, "persona webhooks": 0}


async def test_every_lock_table_is_empty_once_runs_have_finished(world):
    world.extra_config = THREADS_ON + "[durability]\nresume_interrupted = false\n"  # turns take the session's lock
    world.llm.hang(then=Step.reply("Waited."))  # the first turn stays in its model call
    world.llm.tool_call("spawn_subagent", {"prompt": "Check the sum"})
    world.llm.reply("Checked.")
    world.llm.reply("The sub-agent checked it.")
    world.llm.tool_call("sessions_spawn", {"task": "Research it"})
    bot = await world.start_bot()
    mention = f"<@{world.discord.bot_user_id}>"

    first = await world.discord.send_user_message(world.alice, world.channel, f"{mention} wait")
    await world.llm.wait_hanging(1)
    assert lock_tables(bot) == EMPTY | {"session turns": 1}  # the turn holds its session's lock
    world.llm.release()
    assert (await world.discord.wait_for_message(world.channel, answer_to(first)))["content"] == "Waited."
    await world.quiescent()
    assert lock_tables(bot) == EMPTY

    for text, answer in (("check it", "The sub-agent checked it."), ("research it", "ok")):
        asked = await world.discord.send_user_message(world.alice, world.channel, f"{mention} {text}")
        assert (await world.discord.wait_for_message(world.channel, answer_to(asked)))["content"] == answer
        await world.quiescent()
    spawned = await command(world, world.alice, "subagents spawn", agent="researcher", task="x", thread=True)
    assert spawned.startswith("Spawned subagent researcher"), spawned
    [thread] = world.discord.threads(world.channel)
    await world.quiescent()
    follow_up = await world.discord.send_user_message(world.alice, thread, "and more")
    await world.discord.wait_for_message(thread, answer_to(follow_up))
    for i in range(5):  # other conversations: channels of their own
        channel = world.discord.add_text_channel(world.guild, f"room-{i}")
        asked = await world.discord.send_user_message(world.alice, channel, f"{mention} hello")
        await world.discord.wait_for_message(channel, answer_to(asked))
    await world.quiescent()

    assert world.rows("SELECT kind, status FROM runs WHERE kind != 'chat' ORDER BY created_at") == [
        ("spawn", "completed"),
        ("spawn", "completed"),
        ("spawn", "completed"),
        ("followup", "completed"),
    ]
    await eventually(lambda: lock_tables(bot) == EMPTY, timeout=5, describe=lambda: f"lock tables: {lock_tables(bot)}")
