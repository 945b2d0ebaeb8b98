"""Who may talk to a session in its bound thread, over the wire: the binder, the session's owner or a moderator
(audited when it is someone else's session); anyone else's message is not routed and they are told privately,
once per thread. A follow-up a thread message starts stays the owner's, and thread messages to a running run
keep the steer rate limit."""

from __future__ import annotations

import re
import time

from tests.fakes.openai_server import Step
from tests.harness import answer_to
from tests.polling import eventually
from tests.test_wire_control import command, member
from tests.test_wire_threads import THREADS_ON, spawn_into_thread

NOTICE = (
    "🔒 <#{thread}> is bound to <@{owner}>'s sub-agent session; only they or a moderator can talk to it there. "
    "Start your own with `/subagents spawn`."
)


class SteppedClock:
    """Real time, plus what the test moved it forward by."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


def agent(body):
    """Echo what it is told; a message containing ``hang`` keeps its run running."""
    last = body["messages"][-1]["content"]
    return Step.hang() if "hang" in last else "echo: " + last


async def thread_of_alice(world):
    world.extra_config = THREADS_ON
    world.llm.default = agent
    await world.start_bot()
    _, thread = await spawn_into_thread(world)
    await world.quiescent()
    return thread


def runs(world):
    return world.rows("SELECT kind, status, requester_user_id FROM runs ORDER BY created_at")


def dm_messages(world, user):
    return world.discord.channel_messages(world.discord.add_dm_channel(user))


async def said_in_thread(world, thread, user, text):
    """``user`` posts in ``thread``; wait until the bot answered it (the sub-agent's echo), then for quiet."""
    asked = await world.discord.send_user_message(user, thread, text)
    answer = await world.discord.wait_for_message(thread, answer_to(asked))
    await world.quiescent()
    return answer["content"]


async def test_another_members_message_is_not_routed_and_they_are_told_once_privately(world):
    thread = await thread_of_alice(world)
    bob = member(world, "bob")
    requests = len(world.llm.requests)

    await world.discord.send_user_message(bob, thread, "hang on, this is mine now")
    notice = await world.discord.wait_for_message(world.discord.add_dm_channel(bob), lambda m: True)
    assert notice["content"] == NOTICE.format(thread=thread.id, owner=world.alice.id)
    assert world.discord.message_meta(notice).allowed_mentions == {"parse": []}  # names Alice, pings nobody
    await world.discord.send_user_message(bob, thread, "hang on, I said mine")
    assert await said_in_thread(world, thread, world.alice, "and Europe?") == "echo: and Europe?"

    assert [m["content"] for m in dm_messages(world, bob)] == [notice["content"]]  # told once
    assert len(world.llm.requests) == requests + 1  # only Alice's message reached the model
    assert runs(world) == [("spawn", "completed", world.alice.id), ("followup", "completed", world.alice.id)]
    assert not any(
        "mine" in m["content"] for m in world.discord.channel_messages(thread) if m["author"]["id"] != str(bob.id)
    )


async def test_the_owner_keeps_her_run_after_another_member_posted(world):
    thread = await thread_of_alice(world)
    bob = member(world, "bob")
    await world.discord.send_user_message(world.alice, thread, "hang in there")
    await world.llm.wait_hanging(1)
    await world.discord.send_user_message(bob, thread, "stop that and do mine")
    await world.discord.wait_for_message(world.discord.add_dm_channel(bob), lambda m: True)

    assert world.rows("SELECT content FROM run_inbox") == []  # Bob's words did not steer Alice's run
    refused = await command(world, bob, "subagents kill", target="1")
    assert refused == (
        f"⚠️ You can only kill runs you started; Research the market belongs to "
        f"<@{world.alice.id}>. Ask them or a moderator."
    )
    assert await command(world, world.alice, "subagents kill", target="1") == "killed Research the market."
    assert runs(world) == [("spawn", "completed", world.alice.id), ("followup", "killed", world.alice.id)]


async def test_a_moderators_message_reaches_the_session_stays_the_owners_and_is_audited(world):
    mod = member(world, "mod", manage_messages=True)
    thread = await thread_of_alice(world)

    assert await said_in_thread(world, thread, mod, "please wrap up") == "echo: please wrap up"

    follow_up = world.rows("SELECT id, requester_user_id FROM runs WHERE kind = 'followup'")
    assert [owner for _, owner in follow_up] == [world.alice.id]
    assert world.rows("SELECT guild_id, actor_user_id, target_user_id, action, detail FROM audit_log") == [
        (world.guild.id, mod.id, world.alice.id, "thread message", "please wrap up")
    ]
    assert dm_messages(world, mod) == []
    assert await said_in_thread(world, thread, world.alice, "thanks") == "echo: thanks"
    assert len(world.rows("SELECT * FROM audit_log")) == 1  # the owner's own messages are not audited


async def test_a_configured_moderator_role_may_talk_in_any_bound_thread(world):
    role = world.discord.add_role(world.guild, "Agent wranglers")
    wrangler = world.discord.add_user("wrangler")
    world.discord.add_member(world.guild, wrangler, roles=[role])
    world.moderator_role_ids = [role.id]
    thread = await thread_of_alice(world)

    assert await said_in_thread(world, thread, wrangler, "status?") == "echo: status?"
    assert world.rows("SELECT actor_user_id, action FROM audit_log") == [(wrangler.id, "thread message")]


async def test_when_dms_are_closed_the_notice_is_a_reply_that_pings_only_them_and_goes_away(world, monkeypatch):
    monkeypatch.setattr("bot.discord_adapter.thread_notices.REPLY_SECONDS", 0.2)
    thread = await thread_of_alice(world)
    bob = member(world, "bob")
    bob.accepts_dms = False

    asked = await world.discord.send_user_message(bob, thread, "mine now")
    reply = await world.discord.wait_for_message(
        thread, lambda m: m.get("message_reference", {}).get("message_id") == asked["id"]
    )
    assert reply["content"] == f"<@{bob.id}> " + NOTICE.format(thread=thread.id, owner=world.alice.id)
    assert world.discord.message_meta(reply).allowed_mentions == {
        "parse": [],
        "users": [bob.id],
        "replied_user": True,
    }
    assert [m["id"] for m in reply["mentions"]] == [str(bob.id)]
    await eventually(lambda: world.discord.message_meta(reply).deleted, timeout=5, describe="the notice deleted")
    assert runs(world) == [("spawn", "completed", world.alice.id)]


async def test_the_owners_thread_messages_to_a_running_run_keep_the_steer_rate_limit(world):
    world.clock = clock = SteppedClock()
    thread = await thread_of_alice(world)
    await world.discord.send_user_message(world.alice, thread, "hang in there")
    await world.llm.wait_hanging(1)

    await world.discord.send_user_message(world.alice, thread, "first")
    await world.until("SELECT content FROM run_inbox", [("first",)])
    second = await world.discord.send_user_message(world.alice, thread, "second")
    slow = await world.discord.wait_for_message(thread, answer_to(second))
    assert re.fullmatch(
        r"⚠️ Slow down: one message every 2s reaches a running sub-agent\. This one was not delivered; "
        r"send it again in \d+(\.\d)?s\.",
        slow["content"],
    ), slow["content"]
    assert world.rows("SELECT content FROM run_inbox") == [("first",)]

    clock.ahead += 2.0
    await world.discord.send_user_message(world.alice, thread, "third")
    await world.until("SELECT content FROM run_inbox ORDER BY id", [("first",), ("third",)])
    assert await command(world, world.alice, "subagents steer", target="1", message="fourth") == (
        "⚠️ Steer rate limit exceeded. Wait a moment before sending another steer."
    )  # one rule for a thread message and /subagents steer


async def test_the_rules_hold_after_a_restart(world):
    thread = await thread_of_alice(world)
    bob = member(world, "bob")
    mod = member(world, "mod", manage_threads=True)
    await world.stop_bot(world.bots[0])
    await world.start_bot()

    await world.discord.send_user_message(bob, thread, "mine after the restart")
    notice = await world.discord.wait_for_message(world.discord.add_dm_channel(bob), lambda m: True)
    assert notice["content"] == NOTICE.format(thread=thread.id, owner=world.alice.id)
    assert await said_in_thread(world, thread, mod, "moderating") == "echo: moderating"
    assert await said_in_thread(world, thread, world.alice, "still mine?") == "echo: still mine?"
    assert runs(world) == [
        ("spawn", "completed", world.alice.id),
        ("followup", "completed", world.alice.id),
        ("followup", "completed", world.alice.id),
    ]
    assert world.rows("SELECT actor_user_id, action FROM audit_log") == [(mod.id, "thread message")]


async def test_a_thread_a_moderator_focused_routes_the_binder_and_the_owner_and_stays_the_owners(world):
    world.extra_config = THREADS_ON
    world.llm.default = agent
    mod = member(world, "mod", manage_threads=True)
    bob = member(world, "bob")
    await world.start_bot()
    await command(world, world.alice, "subagents spawn", agent="researcher", task="Draft the memo")
    await world.quiescent()
    answer = await command(world, mod, "focus", target="1")
    thread = world.discord.get_channel(int(re.match(r"✅ created thread <#(\d+)>", answer).group(1)))

    assert await said_in_thread(world, thread, world.alice, "shorter") == "echo: shorter"
    assert await said_in_thread(world, thread, mod, "and simpler") == "echo: and simpler"
    await world.discord.send_user_message(bob, thread, "mine")
    notice = await world.discord.wait_for_message(world.discord.add_dm_channel(bob), lambda m: True)
    assert notice["content"] == NOTICE.format(thread=thread.id, owner=world.alice.id)
    assert [owner for (owner,) in world.rows("SELECT requester_user_id FROM runs")] == [world.alice.id] * 3
