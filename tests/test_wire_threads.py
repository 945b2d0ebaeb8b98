"""Thread-bound sessions over the wire: spawning into a thread, talking to the session there without a
mention, and bindings that end by themselves (idle deadline, archive, delete) — also across restarts."""

from __future__ import annotations

import discord

from tests.fakes.openai_server import Step
from tests.harness import announcement_for, answer_to
from tests.test_wire_control import command
from tests.test_wire_focus import command_in, focused_thread

THREADS_ON = "[session.thread_bindings]\nspawn_subagent_sessions = true\n"


async def answered(world, channel, message):
    """Wait for the bot's reply to ``message``, then for everything it started to settle."""
    await world.discord.wait_for_message(channel, answer_to(message))
    await world.quiescent()


def echo(body):
    """The fake model answers with the last thing it was told."""
    return "echo: " + body["messages"][-1]["content"]


async def echoing_thread(world):
    """A session-mode thread whose sub-agent echoes what it is told, settled after its first answer."""
    world.extra_config = THREADS_ON
    world.llm.default = echo
    await world.start_bot()
    _, thread = await spawn_into_thread(world)
    await world.quiescent()
    return thread


def in_thread(world, thread_id):
    return [m for m in world.discord.channel_messages(thread_id)]


async def spawn_into_thread(world, task="Research the market"):
    answer = await command(world, world.alice, "subagents spawn", agent="researcher", task=task, thread=True)
    assert answer.startswith("Spawned subagent researcher"), answer
    threads = world.discord.threads(world.channel)
    assert len(threads) == 1
    return answer.rsplit("run ", 1)[1].rstrip(")."), threads[0]


async def test_thread_spawns_are_opt_in_per_the_spec(world):
    await world.start_bot()
    answer = await command(world, world.alice, "subagents spawn", agent="researcher", task="x", thread=True)
    assert answer == (
        "⚠️ Discord thread-bound subagent spawns are disabled "
        "(set channels.discord.thread_bindings.spawn_subagent_sessions = true to enable)."
    )
    assert world.discord.threads(world.channel) == [] and world.rows("SELECT COUNT(*) FROM runs") == [(0,)]


async def test_spawn_into_a_thread_answers_there_and_follow_ups_need_no_mention(world):
    world.extra_config = THREADS_ON
    world.llm.reply("Market is growing.")
    world.llm.default = lambda body: "follow-up: " + body["messages"][-1]["content"]
    await world.start_bot()

    run_id, thread = await spawn_into_thread(world)

    created = world.discord.requests_matching("POST", r"^/channels/\d+/threads$")[0]
    assert created.json["type"] == 11 and created.json["auto_archive_duration"] == 1440  # the 24 h idle default
    assert thread.name == "🤖 researcher"
    intro = await world.discord.wait_for_message(thread, lambda m: m["content"].startswith("⚙️"))
    assert intro["content"] == (
        "⚙️ researcher session active (idle auto-unfocus after 24h inactivity). "
        "Messages here go directly to this session."
    )
    announcement = await world.discord.wait_for_message(thread, announcement_for(run_id))
    assert "Market is growing." in announcement["content"]
    assert world.bot_messages() == []  # nothing about it in the parent channel

    question = await world.discord.send_user_message(world.alice, thread, "And in Europe?")
    answer = await world.discord.wait_for_message(thread, answer_to(question))
    assert answer["content"] == "follow-up: And in Europe?"
    await world.quiescent()
    assert len(world.llm.requests) == 2  # the bot's own posts in the thread were not routed back to the model


async def test_idle_deadline_unbinds_with_the_farewell_and_later_messages_are_not_routed(world):
    world.extra_config = "[session.thread_bindings]\nspawn_subagent_sessions = true\nidle_hours = 0.0003\n"
    await world.start_bot()
    _, thread = await spawn_into_thread(world)

    farewell = await world.discord.wait_for_message(thread, lambda m: "Session ended" in m["content"], timeout=10)
    assert farewell["content"] == (
        "⚙️ Session ended automatically after <1m of inactivity. Messages here will no longer be routed."
    )
    assert world.rows("SELECT COUNT(*) FROM thread_bindings") == [(0,)]
    requests = len(world.llm.requests)
    await world.discord.send_user_message(world.alice, thread, "anyone there?")
    await world.quiescent()
    assert len(world.llm.requests) == requests


async def test_expiry_can_also_archive_the_thread(world):
    world.extra_config = THREADS_ON.replace("\n", "\nidle_hours = 0.0003\narchive_on_expiry = true\n", 1)
    await world.start_bot()
    _, thread = await spawn_into_thread(world)

    await world.discord.wait_for_message(thread, lambda m: "Session ended" in m["content"], timeout=10)
    patch = await world.discord.wait_for_request("PATCH", rf"^/channels/{thread.id}$", timeout=5)
    assert patch.json["archived"] is True


async def test_archiving_or_deleting_the_thread_unbinds_at_once_without_a_farewell(world):
    world.extra_config = THREADS_ON
    await world.start_bot()
    _, thread = await spawn_into_thread(world)
    await world.quiescent()
    before = len(in_thread(world, thread.id))

    world.discord.archive_thread(thread)
    await world.discord.wait_for_dispatch("THREAD_UPDATE")

    await world.until("SELECT COUNT(*) FROM thread_bindings", [(0,)])
    assert len(in_thread(world, thread.id)) == before


async def test_binding_and_its_deadline_survive_a_restart(world):
    world.extra_config = "[session.thread_bindings]\nspawn_subagent_sessions = true\nidle_hours = 0.01\n"
    world.llm.default = echo
    bot = await world.start_bot()
    _, thread = await spawn_into_thread(world)
    await world.quiescent()
    await world.stop_bot(bot)
    idle_passed = "last_activity_at = last_activity_at - idle_seconds - 1, deadline_at = deadline_at - idle_seconds - 1"
    world.rows(f"UPDATE thread_bindings SET {idle_passed}")  # while it is down

    await world.start_bot()
    farewell = await world.discord.wait_for_message(thread, lambda m: "Session ended" in m["content"], timeout=5)
    assert "after <1m of inactivity" in farewell["content"]


async def test_routing_still_works_after_a_restart(world):
    world.extra_config = THREADS_ON
    world.llm.default = echo
    bot = await world.start_bot()
    _, thread = await spawn_into_thread(world)
    await world.quiescent()
    await world.stop_bot(bot)

    await world.start_bot()
    question = await world.discord.send_user_message(world.alice, thread, "still there?")
    answer = await world.discord.wait_for_message(thread, answer_to(question))
    assert answer["content"] == "echo: still there?"


async def test_missing_thread_permission_is_named(world):
    world.extra_config = THREADS_ON
    basic = discord.Permissions(view_channel=True, send_messages=True, read_message_history=True)
    world.guild.roles[world.guild.id].permissions = basic.value  # @everyone, as seen in GUILD_CREATE
    world.discord.set_member_permissions(world.guild, world.discord.bot, basic)
    await world.start_bot()
    answer = await command(world, world.alice, "subagents spawn", agent="researcher", task="x", thread=True)
    assert answer == (
        "⚠️ Unable to create or bind a Discord thread for this subagent session: I am missing the "
        "Create Public Threads and Send Messages in Threads permission in #general."
    )
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]


async def test_agent_spawns_a_persistent_session_into_a_thread_and_spawning_from_it_makes_a_sibling(world):
    """The main agent uses sessions_spawn(thread=true): a session-mode thread; a spawn asked for inside that
    thread creates a sibling thread in the parent channel, not a nested one."""
    world.extra_config = THREADS_ON + '[agents.defaults.subagents]\nallow_agents = ["*"]\nmax_spawn_depth = 2\n'

    def main_agent(body):
        last = body["messages"][-1]
        if last["role"] == "tool":
            return "Opened a thread for it."
        if last["content"].endswith("please"):
            return Step.calls([("sessions_spawn", {"task": "Help with taxes", "label": "Tax helper", "thread": True})])
        return "working: " + last["content"]

    world.llm.default = main_agent
    await world.start_bot()
    asked = await world.discord.send_user_message(
        world.alice, world.channel, f"<@{world.discord.bot_user_id}> a helper please"
    )
    await answered(world, world.channel, asked)
    threads = world.discord.threads(world.channel)
    assert [t.name for t in threads] == ["🤖 Tax helper"]
    assert world.rows("SELECT mode FROM sessions WHERE kind = 'subagent'") == [("session",)]

    inside = await world.discord.send_user_message(
        world.alice, threads[0], f"<@{world.discord.bot_user_id}> another please"
    )
    await answered(world, threads[0], inside)
    siblings = world.discord.threads(world.channel)
    assert len(siblings) == 2 and all(t.parent_id == world.channel.id for t in siblings)
    assert world.rows("SELECT COUNT(*) FROM thread_bindings") == [(2,)]


async def test_run_mode_thread_binding_ends_with_the_run(world):
    # the result is posted in its thread as it is (the main agent telling it would speak in the channel)
    world.extra_config = THREADS_ON + '[agents.defaults.subagents]\nallow_agents = ["*"]\nannounce = "direct"\n'

    def main_agent(body):
        if body["messages"][-1]["role"] == "tool":
            return "ok"
        if "ROLE" in body["messages"][0]["content"] or "Subagent Context" in body["messages"][0]["content"]:
            return "one-shot result"
        return Step.calls([("sessions_spawn", {"task": "Quick check", "thread": True, "mode": "run"})])

    world.llm.default = main_agent
    await world.start_bot()
    asked = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> check")
    await answered(world, world.channel, asked)
    thread = world.discord.threads(world.channel)[0]
    assert any("one-shot result" in m["content"] for m in in_thread(world, thread.id))

    await world.until("SELECT COUNT(*) FROM thread_bindings", [(0,)])


async def test_a_thread_deleted_while_the_bot_was_down_is_unbound_at_start_up(world):
    world.extra_config = THREADS_ON
    bot = await world.start_bot()
    _, thread = await spawn_into_thread(world)
    await world.quiescent()
    await world.stop_bot(bot)
    world.discord.delete_channel(thread)

    await world.start_bot()

    await world.until("SELECT COUNT(*) FROM thread_bindings", [(0,)])


async def test_other_bots_are_not_routed_unless_configured(world):
    thread = await echoing_thread(world)
    requests = len(world.llm.requests)
    other_bot = world.discord.add_user("otherbot", bot=True)
    world.discord.add_member(world.guild, other_bot)

    await world.discord.send_user_message(other_bot, thread, "beep boop")
    marker = await world.discord.send_user_message(world.alice, thread, "human here")
    await world.discord.wait_for_message(thread, answer_to(marker))
    assert len(world.llm.requests) == requests + 1
    assert world.llm.requests[-1]["messages"][-1]["content"] == "human here"


async def test_deleting_a_bound_thread_unbinds_it(world):
    world.extra_config = THREADS_ON
    await world.start_bot()
    _, thread = await spawn_into_thread(world)
    await world.quiescent()

    world.discord.delete_channel(thread)
    await world.discord.wait_for_dispatch("THREAD_DELETE")

    await world.until("SELECT COUNT(*) FROM thread_bindings", [(0,)])


async def test_in_a_dm_the_dm_itself_is_bound(world):
    world.extra_config = THREADS_ON
    world.guild_commands = False  # global commands, so they work in DMs
    world.llm.default = lambda body: "dm echo: " + body["messages"][-1]["content"]
    await world.start_bot()
    dm = world.discord.add_dm_channel(world.alice)

    inter = await world.discord.slash(
        world.alice, dm, "subagents spawn", agent="researcher", task="Keep notes", thread=True
    )
    assert (await world.discord.wait_followup(inter))["content"].startswith("Spawned subagent researcher")
    assert world.rows("SELECT thread_id, parent_channel_id FROM thread_bindings") == [(dm.id, None)]
    await world.quiescent()

    question = await world.discord.send_user_message(world.alice, dm, "note this")
    answer = await world.discord.wait_for_message(dm, answer_to(question))
    assert answer["content"] == "dm echo: note this"
    assert world.discord.threads() == []


async def test_in_a_forum_channel_the_session_gets_a_post(world):
    world.extra_config = THREADS_ON
    forum = world.discord.add_text_channel(world.guild, "ideas", forum=True)
    world.llm.reply("Idea noted.")
    await world.start_bot()

    inter = await world.discord.slash(
        world.alice, forum, "subagents spawn", agent="researcher", task="Collect ideas", thread=True
    )
    assert (await world.discord.wait_followup(inter))["content"].startswith("Spawned subagent researcher")

    post = world.discord.threads(forum)[0]
    assert post.name == "🤖 researcher"
    created = world.discord.requests_matching("POST", rf"^/channels/{forum.id}/threads$")[0]
    assert created.json["message"]["content"] == "⚙️ Sub-agent session"
    await world.discord.wait_for_message(post, lambda m: "Idea noted." in m["content"])


def run_mode_spawner(task="Quick check"):
    """A main agent that spawns a one-shot (``mode: run``) thread session; the sub-agent answers its task."""

    def agent(body):
        if body["messages"][-1]["role"] == "tool":
            return "ok"
        if "Subagent Context" in body["messages"][0]["content"]:
            return "one-shot result"
        return Step.calls([("sessions_spawn", {"task": task, "thread": True, "mode": "run"})])

    return agent


async def test_a_run_mode_thread_says_goodbye_after_its_result_and_then_routes_nothing(world):
    world.extra_config = THREADS_ON + '[agents.defaults.subagents]\nannounce = "direct"\n'  # its result in the thread
    world.llm.default = run_mode_spawner()
    await world.start_bot()
    asked = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> check")
    await answered(world, world.channel, asked)
    thread = world.discord.threads(world.channel)[0]

    farewell = await world.discord.wait_for_message(thread, lambda m: "Session ended" in m["content"])
    assert farewell["content"] == "⚙️ Session ended. Messages here will no longer be routed."
    assert farewell["author"]["id"] == str(world.discord.bot_user_id) and farewell.get("webhook_id") is None
    posts = in_thread(world, thread.id)
    result = next(i for i, m in enumerate(posts) if "one-shot result" in m["content"])
    assert result < posts.index(farewell)
    await world.until("SELECT COUNT(*) FROM thread_bindings", [(0,)])
    requests = len(world.llm.requests)
    await world.discord.send_user_message(world.alice, thread, "still there?")
    await world.quiescent()
    assert len(world.llm.requests) == requests


async def test_a_killed_run_mode_thread_run_ends_its_binding_with_the_farewell(world):
    world.extra_config = THREADS_ON

    def agent(body):
        if "Subagent Context" in body["messages"][0]["content"]:
            return Step.hang()
        return run_mode_spawner()(body)

    world.llm.default = agent
    await world.start_bot()
    await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> check")
    await world.llm.wait_hanging(1)
    thread = world.discord.threads(world.channel)[0]
    assert world.rows("SELECT COUNT(*) FROM thread_bindings") == [(1,)]

    assert await command(world, world.alice, "subagents kill", target="1") == "killed Quick check."

    farewell = await world.discord.wait_for_message(thread, lambda m: "Session ended" in m["content"])
    assert farewell["content"] == "⚙️ Session ended. Messages here will no longer be routed."
    await world.until("SELECT COUNT(*) FROM thread_bindings", [(0,)])


async def test_discords_own_auto_archive_does_not_end_the_binding(world):
    thread = await echoing_thread(world)
    assert thread.auto_archive_duration == 1440  # the smallest duration covering the 24 h idle timeout

    world.discord.advance_time(1441 * 60)  # a quiet day: Discord archives the thread by itself
    await world.discord.wait_for_dispatch("THREAD_UPDATE")
    assert thread.archived

    question = await world.discord.send_user_message(world.alice, thread, "back again")
    answer = await world.discord.wait_for_message(thread, answer_to(question))
    assert answer["content"] == "echo: back again" and not thread.archived
    await world.quiescent()
    assert world.rows("SELECT COUNT(*) FROM thread_bindings") == [(1,)]

    world.discord.advance_time(1441 * 60)
    await world.until("SELECT COUNT(*) FROM thread_bindings", [(1,)])
    bot = world.bots[0]
    await world.stop_bot(bot)
    await world.start_bot()  # start-up reconciliation sees an idle archive, not a closed thread
    question = await world.discord.send_user_message(world.alice, thread, "and after a restart?")
    answer = await world.discord.wait_for_message(thread, answer_to(question))
    assert answer["content"] == "echo: and after a restart?"

    world.discord.archive_thread(thread, locked=True)  # a person locks it: that ends the binding
    await world.until("SELECT COUNT(*) FROM thread_bindings", [(0,)])


async def test_a_longer_idle_timeout_gets_a_longer_auto_archive_and_the_setting_is_a_floor(world):
    world.extra_config = "[session.thread_bindings]\nspawn_subagent_sessions = true\nidle_hours = 48\n"
    await world.start_bot()
    _, thread = await spawn_into_thread(world)
    assert thread.auto_archive_duration == 4320

    world.extra_config = (
        "[session.thread_bindings]\nspawn_subagent_sessions = true\nidle_hours = 0.5\nauto_archive_minutes = 1440\n"
    )
    await world.stop_bot(world.bots[0])
    await world.start_bot()
    await command(world, world.alice, "subagents spawn", agent="researcher", task="Second", thread=True)
    assert world.discord.threads(world.channel)[-1].auto_archive_duration == 1440


async def test_a_bound_session_mode_session_is_not_archived_until_its_thread_lets_go(world):
    world.extra_config = THREADS_ON + "[agents.defaults.subagents]\narchive_after_minutes = 0.005\n"
    world.llm.default = echo
    await world.start_bot()
    _, thread = await spawn_into_thread(world)
    await world.quiescent()

    assert world.rows("SELECT mode, archive_at, archived_at FROM sessions WHERE kind = 'subagent'") == [
        ("session", None, None)
    ]
    assert "Archive: not scheduled" in await command(world, world.alice, "subagents info", target="1")
    question = await world.discord.send_user_message(world.alice, thread, "still yours?")
    assert (await world.discord.wait_for_message(thread, answer_to(question)))["content"] == "echo: still yours?"
    await world.quiescent()
    assert world.rows("SELECT archive_at, archived_at FROM sessions WHERE kind = 'subagent'") == [(None, None)]

    assert await command_in(world, world.alice, thread, "unfocus") == "✅ Conversation unfocused."
    await world.until("SELECT archived_at IS NOT NULL FROM sessions WHERE kind = 'subagent'", [(1,)])


async def test_a_message_to_a_session_waiting_on_its_children_joins_the_waiting_run(world):
    world.extra_config = THREADS_ON + "[agents.defaults.subagents]\nmax_spawn_depth = 2\n"

    def agent(body):
        messages = body["messages"]
        system, last = messages[0]["content"], messages[-1]
        if "depth 2/2" in system:
            return Step.hang(then=Step.reply("child finding"))
        if last["role"] == "tool":
            return "waiting for my helper"
        if "[Internal task completion event]" in last["content"]:
            users = [m["content"] for m in messages if m["role"] == "user"]
            return "synthesis after: " + " | ".join(u[:40] for u in users[-2:])
        return Step.calls([("sessions_spawn", {"task": "dig deeper"})])

    world.llm.default = agent
    await world.start_bot()
    _run_id, thread = await spawn_into_thread(world, task="Investigate")
    await world.llm.wait_hanging(1)
    await world.until("SELECT COUNT(*) FROM runs WHERE status = 'waiting_children'", [(1,)])

    await world.discord.send_user_message(world.alice, thread, "Also check prices")
    await world.until("SELECT COUNT(*) FROM run_inbox WHERE status = 'pending' AND source_run_id IS NULL", [(1,)])
    session_runs = "SELECT COUNT(*) FROM runs r JOIN sessions s ON s.key = r.session_key WHERE s.depth = 1"
    assert world.rows(session_runs) == [(1,)]

    world.llm.release()
    synthesis = await world.discord.wait_for_message(thread, lambda m: "synthesis after:" in m["content"])
    assert "Also check prices" in synthesis["content"]
    await world.quiescent()
    assert world.rows(session_runs) == [(1,)]


async def test_start_up_asks_discord_for_a_servers_open_threads_once_and_about_the_others_one_by_one(world):
    kept = await focused_thread(world, "Plan K")
    locked, deleted = world.discord.add_thread(world.channel, "locked"), world.discord.add_thread(world.channel, "gone")
    for thread in (locked, deleted):
        assert (await command_in(world, world.alice, thread, "focus", target="1")).startswith("✅ bound")
    await world.stop_bot(world.bots[0])
    world.discord.archive_thread(locked, locked=True)  # while the bot is down
    world.discord.delete_channel(deleted)
    asked_before = len(world.discord.requests_matching("GET", r"/threads/active$|/channels/\d+$"))

    await world.start_bot()

    await world.until("SELECT thread_id FROM thread_bindings", [(kept.id,)])
    asked = world.discord.requests_matching("GET", r"/threads/active$|/channels/\d+$")[asked_before:]
    assert sorted(request.path for request in asked) == sorted(
        [f"/channels/{locked.id}", f"/channels/{deleted.id}", f"/guilds/{world.guild.id}/threads/active"]
    )
