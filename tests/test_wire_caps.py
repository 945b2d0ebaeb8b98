"""Caps that hold under pressure: an agent's children cap is not raced by parallel tool calls, and what one
member may run at once is a per-member limit worded for people — not the agent's cap."""

from __future__ import annotations

import json

from tests.fakes.openai_server import Step
from tests.harness import announcement_for, spawned_run_id
from tests.test_wire_control import command, member

CAP_OF_TWO = "[agents.defaults.subagents]\nmax_children_per_agent = 2\n"


async def test_three_spawns_in_one_model_response_respect_a_cap_of_two(world):
    world.extra_config = CAP_OF_TWO

    def agent(body):
        messages = body["messages"]
        if "Subagent Context" in messages[0]["content"]:
            return Step.hang()
        if messages[-1]["role"] == "tool":
            return "spawned what I could"
        return Step.calls([("sessions_spawn", {"task": f"part {i}"}) for i in (1, 2, 3)])

    world.llm.default = agent
    await world.start_bot()
    await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> split it")
    await world.discord.wait_for_message(world.channel, lambda m: m["content"] == "spawned what I could")

    # the main agent's second request, whenever it came: the two children it spawned may have asked before it
    follow_up = next(r for r in world.llm.requests if r["messages"][-1]["role"] == "tool")
    results = [json.loads(m["content"]) for m in follow_up["messages"] if m["role"] == "tool"]
    assert sorted(r["status"] for r in results) == ["accepted", "accepted", "forbidden"]
    refused = next(r for r in results if r["status"] == "forbidden")
    assert refused["error"] == "sessions_spawn has reached max active children for this session (2/2)"
    assert world.rows("SELECT COUNT(*) FROM sessions WHERE kind = 'subagent'") == [(2,)]


async def test_members_spawn_under_their_own_limit_not_the_agents_children_cap(world):
    world.extra_config = "[agents.defaults.subagents]\nmax_children_per_agent = 1\n"
    world.llm.default = lambda body: Step.hang()
    await world.start_bot()
    bob, carol = member(world, "bob"), member(world, "carol")

    for user in (world.alice, bob, carol):  # the agent's cap of 1 does not limit people
        assert (await command(world, user, "subagents spawn", agent="researcher", task="work")).startswith(
            "Spawned subagent"
        )
    assert (await command(world, world.alice, "subagents spawn", agent="researcher", task="more")).startswith(
        "Spawned subagent"
    )
    assert world.rows("SELECT COUNT(*) FROM runs") == [(4,)]


async def test_a_member_over_their_limit_is_refused_in_their_words_and_others_are_not(world):
    world.llm.default = lambda body: Step.hang()
    await world.start_bot()
    bob = member(world, "bob")
    for i in range(5):
        await command(world, world.alice, "subagents spawn", agent="researcher", task=f"job {i}")

    assert await command(world, world.alice, "subagents spawn", agent="researcher", task="one more") == (
        "⚠️ You already have 5 sub-agents running on this server; wait for one to finish or kill one."
    )
    assert world.rows("SELECT COUNT(*) FROM runs") == [(5,)]
    assert (await command(world, bob, "subagents spawn", agent="researcher", task="mine")).startswith(
        "Spawned subagent"
    )
    assert await command(world, world.alice, "subagents kill", target="job 0") == "killed job 0."
    assert (await command(world, world.alice, "subagents spawn", agent="researcher", task="now")).startswith(
        "Spawned subagent"
    )


async def command_in(world, user, channel, name, **options) -> str:
    """Run a slash command in ``channel`` (a thread, another channel, another server's); return its private answer."""
    inter = await world.discord.slash(user, channel, name, **options)
    ack = await world.discord.wait_ack(inter)
    assert ack.status_code == 200 and ack.ephemeral
    reply = await world.discord.wait_followup(inter, timeout=40)
    assert reply["flags"] & 64, "control replies are private"
    return reply["content"]


async def test_a_members_limit_counts_their_sub_agents_in_every_channel_and_thread_of_the_server(world):
    world.llm.default = lambda body: Step.hang()
    await world.start_bot()
    bob = member(world, "bob")
    other = world.discord.add_text_channel(world.guild, "other")
    side = world.discord.add_thread(world.channel, "side talk", owner=world.alice)
    # each thread and channel is a conversation of its own: the limit of 5 counts across all of them
    for room, tasks in ((world.channel, ("job 0", "job 1")), (side, ("job 2", "job 3")), (other, ("job 4",))):
        for task in tasks:
            spawned = await command_in(world, world.alice, room, "subagents spawn", agent="researcher", task=task)
            assert spawned.startswith("Spawned subagent")
    for room in (world.channel, side, other, world.discord.add_thread(other, "fresh", owner=world.alice)):
        assert await command_in(world, world.alice, room, "subagents spawn", agent="researcher", task="more") == (
            "⚠️ You already have 5 sub-agents running on this server; wait for one to finish or kill one."
        )
    assert world.rows("SELECT COUNT(*) FROM runs") == [(5,)]
    assert world.rows("SELECT COUNT(DISTINCT channel_id) FROM runs") == [(3,)]

    # a second member's limit is their own, in the same rooms
    for room in (side, other):
        assert (await command_in(world, bob, room, "subagents spawn", agent="researcher", task="bob")).startswith(
            "Spawned subagent"
        )
    # one of Alice's ending (in the thread) frees a place anywhere on the server
    assert await command_in(world, world.alice, side, "subagents kill", target="job 2") == "killed job 2."
    assert (await command_in(world, world.alice, other, "subagents spawn", agent="researcher", task="now")).startswith(
        "Spawned subagent"
    )
    assert await command_in(world, world.alice, world.channel, "subagents spawn", agent="researcher", task="x") == (
        "⚠️ You already have 5 sub-agents running on this server; wait for one to finish or kill one."
    )
    assert world.rows("SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running')") == [(7,)]


async def test_the_main_agent_spawning_in_a_members_turns_counts_against_that_members_limit(world):
    """Mentioning the bot in thread after thread does not get round the limit: the main agent's spawns in a
    member's turns count as theirs, and a spawn past the limit is refused to the agent in plain words."""
    world.discord_extra = "max_active_runs_per_member = 2"

    def agent(body):
        messages = body["messages"]
        if "Subagent Context" in messages[0]["content"]:
            return Step.hang()
        if messages[-1]["role"] == "tool":
            return "spawn said: " + json.loads(messages[-1]["content"])["status"]
        return Step.calls([("sessions_spawn", {"task": "dig"})])

    world.llm.default = agent
    await world.start_bot()
    bob = member(world, "bob")
    answers = []
    for user in (world.alice, world.alice, world.alice, bob):
        room = world.discord.add_thread(world.channel, f"talk {len(answers)}", owner=user)
        sent = await world.discord.send_user_message(user, room, f"<@{world.discord.bot_user_id}> dig")
        answers.append(
            (
                await world.discord.wait_for_message(
                    room, lambda m, sent=sent: m.get("message_reference", {}).get("message_id") == sent["id"]
                )
            )["content"]
        )

    assert answers == ["spawn said: accepted", "spawn said: accepted", "spawn said: forbidden", "spawn said: accepted"]
    refusal = next(
        json.loads(m["content"])
        for r in world.llm.requests
        for m in r["messages"]
        if m["role"] == "tool" and "forbidden" in m["content"]
    )
    assert refusal["error"] == (
        "The member whose turn this is already has 2 sub-agents running on this server; wait for one to finish or "
        "kill one."
    )
    assert world.rows("SELECT requester_user_id, COUNT(*) FROM runs WHERE kind = 'spawn' GROUP BY 1 ORDER BY 2") == [
        (bob.id, 1),
        (world.alice.id, 2),
    ]


async def test_a_member_mentioning_the_bot_in_thread_after_thread_has_at_most_ten_turns_in_progress(world):
    """By default a member's own runs in progress on a server are capped (budgets.member_concurrent_runs = 10):
    the eleventh mention while ten turns are busy is refused in words, and another member is not held up."""
    world.llm.default = lambda body: Step.hang()
    await world.start_bot()
    bob = member(world, "bob")
    for n in range(10):
        room = world.discord.add_thread(world.channel, f"talk {n}", owner=world.alice)
        await world.discord.send_user_message(world.alice, room, f"<@{world.discord.bot_user_id}> think {n}")
    await world.llm.wait_hanging(10, timeout=20)

    room = world.discord.add_thread(world.channel, "one more", owner=world.alice)
    sent = await world.discord.send_user_message(world.alice, room, f"<@{world.discord.bot_user_id}> and this")
    refused = await world.discord.wait_for_message(
        room, lambda m: (m.get("message_reference") or {}).get("message_id") == sent["id"]
    )
    assert refused["content"] == (
        "⚠️ Over budget: your runs in progress on this server: 10 of 10 runs (member_concurrent_runs). "
        "One frees up when one of them ends."
    )
    assert world.rows("SELECT COUNT(*) FROM runs WHERE requester_user_id = ?", (world.alice.id,)) == [(10,)]

    await world.discord.send_user_message(bob, world.channel, f"<@{world.discord.bot_user_id}> my turn")
    await world.llm.wait_hanging(11, timeout=20)
    assert world.rows("SELECT COUNT(*) FROM runs WHERE requester_user_id = ?", (bob.id,)) == [(1,)]


async def test_a_follow_up_counts_against_the_limit_of_the_member_it_answers_to(world):
    """Messaging finished sub-agents one after another does not get round the limit: each follow-up is a live
    sub-agent of the session's owner, refused past their limit and started once one of theirs ends."""
    world.discord_extra = "max_active_runs_per_member = 1"
    world.llm.reply("first answer")
    await world.start_bot()
    done = await command(world, world.alice, "subagents spawn", agent="researcher", task="Finish quickly")
    await world.discord.wait_for_message(world.channel, announcement_for(spawned_run_id({"content": done})))
    world.llm.hang()
    assert (await command(world, world.alice, "subagents spawn", agent="researcher", task="Take your time")).startswith(
        "Spawned subagent"
    )
    await world.llm.wait_hanging(1)

    refused = await command(world, world.alice, "subagents send", target="Finish quickly", message="And then?")
    assert refused == (
        f"⚠️ <@{world.alice.id}> already has 1 sub-agents running on this server; wait for one to finish or kill one."
    )
    assert world.rows("SELECT COUNT(*) FROM runs") == [(2,)]

    assert await command(world, world.alice, "subagents kill", target="Take your time") == "killed Take your time."
    world.llm.reply("the follow-up answer")
    assert await command(world, world.alice, "subagents send", target="Finish quickly", message="And then?") == (
        "the follow-up answer"
    )
