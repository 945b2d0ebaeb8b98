"""Sub-agents post in their threads under their own name through one reused webhook, fall back to the bot's
identity without Manage Webhooks, and still post exactly once when a webhook call's answer is lost."""

from __future__ import annotations

import discord

from tests.harness import announcement_for
from tests.test_wire_control import command

THREADS_ON = "[session.thread_bindings]\nspawn_subagent_sessions = true\n"
WEBHOOK_EXECUTE = r"^/webhooks/\d+/[^/]+$"


async def thread_spawn(world, task):
    answer = await command(world, world.alice, "subagents spawn", agent="researcher", task=task, thread=True)
    run_id = answer.rsplit("run ", 1)[1].rstrip(").")
    return run_id


async def test_posts_use_the_agent_persona_and_one_webhook_per_parent_channel(world):
    world.extra_config = THREADS_ON
    world.status_messages = False
    await world.start_bot()

    first_run = await thread_spawn(world, "First")
    first_thread = world.discord.threads(world.channel)[0]
    first = await world.discord.wait_for_message(first_thread, announcement_for(first_run))
    second_run = await thread_spawn(world, "Second")
    second_thread = world.discord.threads(world.channel)[1]
    second = await world.discord.wait_for_message(second_thread, announcement_for(second_run))

    for message in (first, second):
        meta = world.discord.message_meta(message)
        assert meta.source == "webhook" and meta.username == "🤖 researcher"
        assert meta.allowed_mentions["parse"] == []
    assert len(world.discord.requests_matching("POST", r"^/channels/\d+/webhooks$")) == 1


async def test_without_manage_webhooks_the_bot_posts_as_itself(world):
    world.extra_config = THREADS_ON
    world.status_messages = False
    no_webhooks = discord.Permissions(
        view_channel=True,
        send_messages=True,
        send_messages_in_threads=True,
        create_public_threads=True,
        read_message_history=True,
    )
    world.guild.roles[world.guild.id].permissions = no_webhooks.value
    world.discord.set_member_permissions(world.guild, world.discord.bot, no_webhooks)
    await world.start_bot()

    run_id = await thread_spawn(world, "Fallback")
    thread = world.discord.threads(world.channel)[0]
    message = await world.discord.wait_for_message(thread, announcement_for(run_id))

    assert world.discord.message_meta(message).source == "rest"
    assert message["author"]["id"] == str(world.discord.bot_user_id)


async def test_a_lost_webhook_answer_does_not_post_twice(world):
    world.extra_config = THREADS_ON
    world.status_messages = False
    world.llm.hang(then=None)
    await world.start_bot()
    run_id = await thread_spawn(world, "Once")
    await world.llm.wait_hanging(1)
    thread = world.discord.threads(world.channel)[0]
    webhook_posts = len(world.discord.requests_matching("POST", WEBHOOK_EXECUTE))  # the command's own followups
    world.discord.inject_failure("POST", WEBHOOK_EXECUTE, 500, times=1, after_commit=True)
    world.llm.release()

    await world.discord.wait_for_message(thread, announcement_for(run_id))
    await world.quiescent()

    posted = [m for m in world.discord.channel_messages(thread) if announcement_for(run_id)(m)]
    assert len(posted) == 1
    assert world.rows("SELECT status, attempts FROM outbox") == [("delivered", 1)]
    assert len(world.discord.requests_matching("POST", WEBHOOK_EXECUTE)) == webhook_posts + 1
