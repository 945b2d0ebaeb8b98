"""The bot freezes the heap it has once started (Python's full collections then leave it out: the loop's longest
stalls under thousands of runs) and answers as before; closing thaws it, so a process that starts the bot again keeps
nothing of the earlier start for ever."""

from __future__ import annotations

import gc

from tests.test_wire_chat import echo_history, replies_to


async def test_the_start_up_heap_is_frozen_while_the_bot_runs_and_thawed_at_close(world):
    world.llm.default = echo_history
    assert gc.get_freeze_count() == 0
    bot = await world.start_bot()
    assert gc.get_freeze_count() > 100_000  # modules, classes, schemas, the core

    for text in ("first", "second"):
        asked = await world.discord.send_user_message(
            world.alice, world.channel, f"<@{world.discord.bot_user_id}> {text}"
        )
        answer = await world.discord.wait_for_message(world.channel, replies_to(world, asked))
        assert answer["content"].endswith(text)

    await world.stop_bot(bot)
    assert gc.get_freeze_count() == 0
