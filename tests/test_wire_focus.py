"""/focus, /unfocus, /agents and /session idle|max-age over the wire."""

from __future__ import annotations

import re

from tests.harness import answer_to
from tests.test_wire_control import command, member, spawn

THREADS_ON = "[session.thread_bindings]\nspawn_subagent_sessions = true\n"


async def command_in(world, user, channel, name, **options) -> str:
    inter = await world.discord.slash(user, channel, name, **options)
    ack = await world.discord.wait_ack(inter)
    assert ack.status_code == 200 and ack.ephemeral
    return (await world.discord.wait_followup(inter, timeout=20))["content"]


async def test_focus_in_a_channel_creates_a_thread_that_routes_to_the_session(world):
    world.extra_config = THREADS_ON
    world.llm.reply("first answer")
    world.llm.default = lambda body: "again: " + body["messages"][-1]["content"]
    await world.start_bot()
    await spawn(world, task="Draft the memo")
    await world.quiescent()

    answer = await command(world, world.alice, "focus", target="1")
    match = re.fullmatch(r"✅ created thread <#(\d+)> and bound it to (agent:researcher:subagent:[0-9a-f-]+)\.", answer)
    assert match, answer
    thread = world.discord.get_channel(int(match.group(1)))
    assert thread.parent_id == world.channel.id and thread.name == "🤖 Draft the memo"

    question = await world.discord.send_user_message(world.alice, thread, "Shorter?")
    reply = await world.discord.wait_for_message(thread, answer_to(question))
    assert reply["content"] == "again: Shorter?"

    agents = await command(world, world.alice, "agents")
    assert agents.splitlines() == ["agents:", "-----", f"1. Draft the memo (thread:{thread.id}) done"]


async def test_focus_inside_a_thread_binds_it_and_refocus_by_others_is_refused(world):
    world.extra_config = THREADS_ON
    await world.start_bot()
    await spawn(world, task="Plan A")
    await world.quiescent()
    thread = world.discord.add_thread(world.channel, "discussion")
    bob = member(world, "bob")

    assert (await command_in(world, world.alice, thread, "focus", target="1")).startswith(
        "✅ bound this conversation to agent:researcher:subagent:"
    )
    assert await command_in(world, bob, thread, "focus", target="1") == (
        f"⚠️ Only <@{world.alice.id}> can refocus this conversation."
    )
    assert (
        await command_in(world, bob, thread, "unfocus") == f"⚠️ Only <@{world.alice.id}> can unfocus this conversation."
    )

    assert await command_in(world, world.alice, thread, "unfocus") == "✅ Conversation unfocused."
    farewell = await world.discord.wait_for_message(thread, lambda m: "unfocused" in m["content"])
    assert farewell["content"] == "⚙️ Thread unfocused. Messages here will no longer be routed."
    assert await command_in(world, world.alice, thread, "unfocus") == "ℹ️ This conversation is not currently focused."


async def focused_thread(world, task):
    """A finished sub-agent of Alice's, and a thread she focused on it."""
    world.extra_config = THREADS_ON
    await world.start_bot()
    await spawn(world, task=task)
    await world.quiescent()
    thread = world.discord.add_thread(world.channel, task.lower().replace(" ", "-"))
    assert (await command_in(world, world.alice, thread, "focus", target="1")).startswith("✅ bound")
    return thread


async def test_session_idle_and_max_age_show_and_set(world):
    thread = await focused_thread(world, "Plan B")
    bob = member(world, "bob")

    shown = await command_in(world, world.alice, thread, "session idle")
    assert re.fullmatch(r"ℹ️ Idle timeout active \(24h, next auto-unfocus at .+ UTC\)\.", shown), shown
    assert await command_in(world, world.alice, thread, "session max-age") == (
        "ℹ️ Max age is currently disabled for this focused session."
    )
    assert re.fullmatch(
        r"✅ Max age set to 8h \(hard auto-unfocus at .+ UTC\)\.",
        await command_in(world, world.alice, thread, "session max-age", duration="8"),
    )
    assert await command_in(world, world.alice, thread, "session idle", duration="off") == (
        "✅ Idle timeout disabled for this binding."
    )
    assert await command_in(world, world.alice, thread, "session idle", duration="soon") == (
        "⚠️ Invalid duration 'soon'. Usage: /session idle <duration|off> (example: /session idle 24h, 90m or off)."
    )
    assert await command_in(world, bob, thread, "session idle", duration="1h") == (
        f"⚠️ Only <@{world.alice.id}> can update session lifecycle settings for this conversation."
    )
    assert world.rows("SELECT idle_seconds, max_age_seconds FROM thread_bindings") == [(0.0, 28800.0)]
    assert await command(world, world.alice, "session idle") == "ℹ️ This conversation is not currently focused."


async def test_short_idle_set_by_command_fires(world):
    thread = await focused_thread(world, "Plan C")

    assert (await command_in(world, world.alice, thread, "session idle", duration="1s")).startswith(
        "✅ Idle timeout set to <1m"
    )
    farewell = await world.discord.wait_for_message(thread, lambda m: "Session ended" in m["content"], timeout=10)
    assert farewell["content"].startswith("⚙️ Session ended automatically after <1m of inactivity.")


async def ask(world, thread, text, user=None):
    """A message in the focused thread, and the session's answer to it."""
    question = await world.discord.send_user_message(user or world.alice, thread, text)
    return (await world.discord.wait_for_message(thread, answer_to(question)))["content"]


async def test_a_focused_thread_keeps_routing_message_after_message_and_after_a_restart(world):
    world.llm.default = lambda body: "again: " + body["messages"][-1]["content"]
    thread = await focused_thread(world, "Plan D")
    bound = world.rows("SELECT thread_id, bound_by FROM thread_bindings")
    assert bound == [(thread.id, world.alice.id)]

    assert await ask(world, thread, "first?") == "again: first?"
    await world.quiescent()
    assert world.rows("SELECT thread_id, bound_by FROM thread_bindings") == bound
    assert await ask(world, thread, "second?") == "again: second?"
    await world.quiescent()
    assert world.rows("SELECT thread_id, bound_by FROM thread_bindings") == bound
    agents = await command(world, world.alice, "agents")
    assert agents.splitlines()[2] == f"1. Plan D (thread:{thread.id}) done"

    bob = member(world, "bob")
    await spawn(world, user=bob, task="Bob's plan")
    await world.quiescent()
    assert await command_in(world, bob, thread, "focus", target="Bob's plan") == (
        f"⚠️ Only <@{world.alice.id}> can refocus this conversation."
    )
    assert world.rows("SELECT thread_id, bound_by FROM thread_bindings") == bound

    await world.stop_bot(world.bots[0])
    await world.start_bot()
    assert await ask(world, thread, "third?") == "again: third?"
    await world.quiescent()
    assert world.rows("SELECT thread_id, bound_by FROM thread_bindings") == bound
    main_history = "SELECT COUNT(*) FROM transcript_messages WHERE session_key LIKE 'agent:main:discord:%'"
    assert world.rows(main_history) == [(2,)]  # the two spawn results; the thread's replies stay in the thread


async def test_focusing_someone_elses_run_needs_its_owner_or_a_moderator(world):
    world.extra_config = THREADS_ON
    await world.start_bot()
    await spawn(world, task="Alice's secret")
    await world.quiescent()
    bob = member(world, "bob")
    bobs_thread = world.discord.add_thread(world.channel, "bob-thread", owner=bob)

    assert await command_in(world, bob, bobs_thread, "focus", target="1") == (
        f"⚠️ You can only focus runs you started; Alice's secret belongs to <@{world.alice.id}>. "
        "Ask them or a moderator."
    )
    assert await command(world, bob, "focus", target="1") == (
        f"⚠️ You can only focus runs you started; Alice's secret belongs to <@{world.alice.id}>. "
        "Ask them or a moderator."
    )
    assert world.rows("SELECT COUNT(*) FROM thread_bindings") == [(0,)]
    assert world.discord.threads(world.channel) == [bobs_thread]

    mod = member(world, "mod", manage_threads=True)
    assert (await command_in(world, mod, bobs_thread, "focus", target="1")).startswith("✅ bound")
    assert world.rows("SELECT actor_user_id, target_user_id, action FROM audit_log") == [
        (mod.id, world.alice.id, "focus")
    ]


async def test_spawning_into_a_thread_from_a_focused_thread_opens_a_sibling(world):
    world.llm.default = lambda body: "done: " + body["messages"][-1]["content"]
    thread = await focused_thread(world, "Plan E")
    assert world.rows("SELECT parent_channel_id FROM thread_bindings") == [(world.channel.id,)]

    answer = await command_in(
        world, world.alice, thread, "subagents spawn", agent="researcher", task="Side quest", thread=True
    )
    assert answer.startswith("Spawned subagent researcher"), answer

    siblings = [t for t in world.discord.threads(world.channel) if t.id != thread.id]
    assert [(t.name, t.parent_id) for t in siblings] == [("🤖 researcher", world.channel.id)]
    await world.discord.wait_for_message(siblings[0], lambda m: "done: Side quest" in m["content"])
    assert world.rows("SELECT COUNT(*) FROM thread_bindings") == [(2,)]


async def test_focus_target_autocompletes_with_the_channels_runs(world):
    thread = await focused_thread(world, "Plan F")

    in_channel = await world.discord.autocomplete(world.alice, world.channel, "focus", focused="target")
    in_thread = await world.discord.autocomplete(world.alice, thread, "focus", focused="target", target="plan")

    assert [c["value"] for c in in_channel] == ["1"] and in_channel[0]["name"].startswith("#1 Plan F — done, ")
    assert [c["value"] for c in in_thread] == ["1"]


async def test_an_archived_session_cannot_be_focused_or_sent_to(world):
    world.extra_config = THREADS_ON + "[agents.defaults.subagents]\narchive_after_minutes = 0.005\n"
    await world.start_bot()
    await spawn(world, task="Old news")
    await world.until("SELECT archived_at IS NOT NULL FROM sessions WHERE kind = 'subagent'", [(1,)])
    thread = world.discord.add_thread(world.channel, "old-news")

    refusal = await command_in(world, world.alice, thread, "focus", target="1")
    assert refusal.startswith("⚠️ Session agent:researcher:subagent:") and " was archived " in refusal
    assert refusal.endswith(
        "takes no more messages. Spawn a new sub-agent to go on (its transcript stays readable with /subagents log)."
    )
    sent = await command(world, world.alice, "subagents send", target="1", message="anything new?")
    assert sent.startswith("⚠️ Session agent:researcher:subagent:") and " was archived " in sent
    assert world.rows("SELECT COUNT(*) FROM thread_bindings") == [(0,)]
    assert world.rows("SELECT COUNT(*) FROM runs") == [(1,)]
