"""/subagents list|info|log|kill|send|steer and /stop over the wire, with owners, moderators and the audit."""

from __future__ import annotations

import discord

from tests.fakes.openai_server import Step
from tests.harness import announcement_for, spawned_run_id


async def command(world, user, name, **options) -> str:
    """Run a slash command; return the text of its (ephemeral) answer."""
    inter = await world.discord.slash(user, world.channel, name, **options)
    ack = await world.discord.wait_ack(inter)
    assert ack.status_code == 200 and ack.elapsed < 3 and ack.ephemeral
    reply = await world.discord.wait_followup(inter, timeout=40)
    assert reply["flags"] & 64, "control replies are private"
    return reply["content"]


async def spawn(world, user=None, agent="researcher", task="Summarise the plan") -> str:
    answer = await command(world, user or world.alice, "subagents spawn", agent=agent, task=task)
    return spawned_run_id({"content": answer})


def member(world, name, **permissions):
    user = world.discord.add_user(name)
    world.discord.add_member(world.guild, user, permissions=discord.Permissions(**permissions) if permissions else None)
    return user


async def test_list_numbers_active_then_recent_and_other_commands_use_the_same_numbers(world):
    world.llm.reply("first result", prompt_tokens=1200, completion_tokens=300)
    await world.start_bot()
    done_id = await spawn(world, task="Finish quickly")
    await world.discord.wait_for_message(world.channel, announcement_for(done_id))
    world.llm.hang()
    running_id = await spawn(world, task="Take your time")
    await world.llm.wait_hanging(1)

    listing = await command(world, world.alice, "subagents list")
    lines = listing.splitlines()
    assert lines[:2] == ["active subagents:", "-----"]
    assert lines[2].startswith("1. Take your time (fake/gpt-4o-mini, ") and lines[2].endswith(") running")
    assert lines[4:6] == ["recent subagents (last 30m):", "-----"]
    assert lines[6].startswith("2. Finish quickly (fake/gpt-4o-mini, ")
    assert "tokens 1.5k (in 1.2k / out 300)) done" in lines[6]

    info = await command(world, world.alice, "subagents info", target="2")
    assert "Status: done" in info and f"Run: {done_id}" in info and "Delivery: delivered" in info
    assert "Transcript: 2 message(s)" in info
    assert f"Run: {running_id}" in await command(world, world.alice, "subagents info", target="1")

    log = await command(world, world.alice, "subagents log", target="#2")
    assert log.splitlines() == ["📜 Subagent log: Finish quickly", "User: Finish quickly", "Assistant: first result"]
    assert await command(world, world.alice, "subagents info", target="9") == "⚠️ Invalid subagent index: 9"
    assert await command(world, world.alice, "subagents info", target="zzz") == "⚠️ Unknown subagent id: zzz"

    choices = await world.discord.autocomplete(world.alice, world.channel, "subagents kill", focused="target")
    assert [c["value"] for c in choices] == ["1", "2"]
    assert choices[0]["name"].startswith("#1 Take your time — running, ")


async def test_kill_cascades_over_three_levels_and_nobody_announces(world):
    world.extra_config = """
[agents.defaults.subagents]
max_spawn_depth = 3
allow_agents = ["*"]
[agents.list.lead]
system_prompt = "ROLE=lead"
[agents.list.worker]
system_prompt = "ROLE=worker"
"""

    def team(body):
        system, last = body["messages"][0]["content"], body["messages"][-1]
        if "ROLE=worker" in system:
            return Step.hang()
        if last["role"] == "tool":
            return "waiting"
        child = "worker" if "ROLE=lead" in system else "lead"
        return Step.calls([("sessions_spawn", {"agentId": child, "task": f"go {child}"})])

    world.llm.default = team
    await world.start_bot()
    await spawn(world, task="Run the project")
    await world.llm.wait_hanging(1, timeout=15)

    answer = await command(world, world.alice, "subagents kill", target="1")

    assert answer == "killed Run the project (+ 2 descendants)."
    await world.quiescent()
    assert sorted(s for (s,) in world.rows("SELECT status FROM runs")) == ["killed"] * 3
    assert world.bot_messages() == []
    assert await command(world, world.alice, "subagents kill", target="1") == "Run the project is already finished."


async def test_steer_reaches_the_next_model_request_and_is_refused_once_finished(world):
    world.extra_config = "[agents.defaults.subagents]\nmax_spawn_depth = 2\n"
    world.llm.hang(then=Step.calls([("sessions_list", {})]))
    world.llm.respond_with(
        lambda body: "saw: " + " | ".join(m["content"] for m in body["messages"] if m["role"] == "user")
    )
    await world.start_bot()
    run_id = await spawn(world, task="Write the report")
    await world.llm.wait_hanging(1)

    assert await command(world, world.alice, "subagents steer", target="1", message="Focus on costs") == (
        f"steered Write the report (run {run_id})."
    )
    assert await command(world, world.alice, "subagents steer", target="1", message="again") == (
        "⚠️ Steer rate limit exceeded. Wait a moment before sending another steer."
    )
    world.llm.release()
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    assert "saw: Write the report | Focus on costs" in announcement["content"]
    assert await command(world, world.alice, "subagents steer", target="1", message="more") == (
        "⚠️ Write the report is already finished."
    )
    assert await command(world, world.alice, "subagents steer", target="1", message="x" * 4001) == (
        "⚠️ Message too long (4001 chars, max 4000)."
    )


async def test_send_to_a_finished_session_waits_for_the_follow_up_and_announces_again(world):
    world.llm.reply("first answer")
    world.llm.reply("the follow-up answer")
    await world.start_bot()
    run_id = await spawn(world)
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    answer = await command(world, world.alice, "subagents send", target="1", message="And the budget?")

    assert answer == "the follow-up answer"
    assert world.llm.requests[-1]["messages"][-1] == {"role": "user", "content": "And the budget?"}
    await world.quiescent()
    assert len([m for m in world.bot_messages() if "✅ Subagent" in m["content"]]) == 2


async def test_only_owners_and_moderators_may_kill_and_moderator_actions_are_audited(world):
    world.llm.hang()
    await world.start_bot()
    run_id = await spawn(world)
    await world.llm.wait_hanging(1)
    bob = member(world, "bob")
    mod = member(world, "mod", manage_messages=True)

    refused = await command(world, bob, "subagents kill", target="1")
    assert refused == (
        f"⚠️ You can only kill runs you started; Summarise the plan belongs to <@{world.alice.id}>. "
        "Ask them or a moderator."
    )
    assert world.rows("SELECT status FROM runs") == [("running",)]
    assert world.rows("SELECT COUNT(*) FROM audit_log") == [(0,)]

    assert await command(world, mod, "subagents kill", target="1") == "killed Summarise the plan."
    assert world.rows("SELECT actor_user_id, target_user_id, action, run_id FROM audit_log") == [
        (mod.id, world.alice.id, "kill", run_id_full(world, run_id))
    ]
    await world.quiescent()
    assert world.bot_messages() == []


def run_id_full(world, prefix):
    return world.rows("SELECT id FROM runs WHERE id LIKE ?", (prefix + "%",))[0][0]


async def test_stop_aborts_the_turn_and_the_subagents(world):
    world.llm.hang()
    world.llm.hang()
    await world.start_bot()
    await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> think hard")
    await world.llm.wait_hanging(1)
    await spawn(world)
    await world.llm.wait_hanging(2)

    assert await command(world, world.alice, "stop") == "⚙️ Agent was aborted. Stopped 1 sub-agent."
    await world.quiescent()
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at") == [("chat", "killed"), ("spawn", "killed")]
    assert world.bot_messages() == []
    assert await command(world, world.alice, "stop") == "Nothing of yours is running in this conversation."


async def test_kill_all_counts_what_it_stopped_and_leaves_other_peoples_runs(world):
    world.llm.hang()
    world.llm.hang()
    world.llm.hang()
    await world.start_bot()
    bob = member(world, "bob")
    await spawn(world, task="Alice one")
    await spawn(world, task="Alice two")
    await spawn(world, user=bob, task="Bob's job")
    await world.llm.wait_hanging(3)

    assert await command(world, world.alice, "subagents kill", target="all") == (
        "killed 2 subagents. 1 belongs to others."
    )
    assert sorted(world.rows("SELECT task, status FROM runs")) == [
        ("Alice one", "killed"),
        ("Alice two", "killed"),
        ("Bob's job", "running"),
    ]


async def test_send_to_a_running_session_returns_its_next_reply(world):
    world.extra_config = "[agents.defaults.subagents]\nmax_spawn_depth = 2\n"
    world.llm.hang(then=Step.calls([("sessions_list", {})]))
    world.llm.respond_with(lambda body: "now answering: " + body["messages"][-1]["content"])
    await world.start_bot()
    await spawn(world, task="Keep going")
    await world.llm.wait_hanging(1)

    inter = await world.discord.slash(world.alice, world.channel, "subagents send", target="1", message="Status?")
    await world.discord.wait_ack(inter)
    world.llm.release()
    reply = await world.discord.wait_followup(inter, timeout=20)

    assert reply["content"] == "now answering: Status?"


async def test_a_configured_moderator_role_may_kill_anyones_run(world):
    role = world.discord.add_role(world.guild, "Agent wranglers")
    wrangler = world.discord.add_user("wrangler")
    world.discord.add_member(world.guild, wrangler, roles=[role])
    world.moderator_role_ids = [role.id]
    world.llm.hang()
    await world.start_bot()
    await spawn(world)
    await world.llm.wait_hanging(1)

    assert await command(world, wrangler, "subagents kill", target="1") == "killed Summarise the plan."
    assert world.rows("SELECT action, actor_user_id FROM audit_log") == [("kill", wrangler.id)]


async def test_stop_counts_the_sub_agents_its_aborted_turn_cascaded_to(world):
    def agent(body):
        messages = body["messages"]
        if "Subagent Context" in messages[0]["content"]:
            return Step.hang()
        if messages[-1]["role"] == "tool":
            return Step.hang()
        return Step.calls([("sessions_spawn", {"task": "part 1"}), ("sessions_spawn", {"task": "part 2"})])

    world.llm.default = agent
    await world.start_bot()
    await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> work")
    await world.llm.wait_hanging(3)
    assert world.rows("SELECT COUNT(*) FROM runs WHERE status = 'running'") == [(3,)]

    assert await command(world, world.alice, "stop") == "⚙️ Agent was aborted. Stopped 2 sub-agents."
    await world.quiescent()
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at") == [
        ("chat", "killed"),
        ("spawn", "killed"),
        ("spawn", "killed"),
    ]


async def test_info_tells_a_coming_archive_from_a_past_one(world):
    await world.start_bot()
    run_id = await spawn(world)
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    info = await command(world, world.alice, "subagents info", target="1")
    archive = next(line for line in info.splitlines() if line.startswith("Archive:"))
    assert archive.startswith("Archive: due ") and "(in 59m" in archive and " ago)" not in archive, archive


async def test_an_older_session_still_resolves_by_its_session_key_or_run_id(world):
    world.llm.reply("first answer")
    world.llm.reply("a later answer")
    await world.start_bot()
    run_id = await spawn(world, task="Old job")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    await world.quiescent()
    # the run ended an hour ago, out of the numbered list's 30 minutes:
    world.rows(
        "UPDATE runs SET created_at = created_at - 3600, started_at = started_at - 3600, ended_at = ended_at - 3600"
    )
    session_key = world.rows("SELECT key FROM sessions WHERE kind = 'subagent'")[0][0]

    assert "recent subagents (last 30m):\n-----\n(none)" in await command(world, world.alice, "subagents list")
    assert await command(world, world.alice, "subagents info", target="1") == "⚠️ Invalid subagent index: 1"
    assert f"Session: {session_key}" in await command(world, world.alice, "subagents info", target=session_key)
    assert f"Run: {run_id_full(world, run_id)}" in await command(world, world.alice, "subagents info", target=run_id)
    log = await command(world, world.alice, "subagents log", target=session_key)
    assert log.splitlines()[1:] == ["User: Old job", "Assistant: first answer"]
    assert await command(world, world.alice, "subagents send", target=run_id, message="More?") == "a later answer"
    bob = member(world, "bob")
    assert (await command(world, bob, "subagents send", target=session_key, message="mine?")).startswith(
        "⚠️ You can only send runs you started"
    )


async def test_an_archived_session_from_hours_ago_can_be_read_but_takes_no_more_messages(world):
    world.extra_config = "[agents.defaults.subagents]\narchive_after_minutes = 0.005\n"
    world.llm.reply("the old answer")
    await world.start_bot()
    run_id = await spawn(world, task="Ancient job")
    await world.until("SELECT archived_at IS NOT NULL FROM sessions WHERE kind = 'subagent'", [(1,)])
    world.rows(  # it all happened three hours ago
        "UPDATE runs SET created_at = created_at - 10800, started_at = started_at - 10800, ended_at = ended_at - 10800"
    )
    world.rows("UPDATE sessions SET archived_at = archived_at - 7200")
    session_key = world.rows("SELECT key FROM sessions WHERE kind = 'subagent'")[0][0]

    assert f"Run: {run_id_full(world, run_id)}" in await command(world, world.alice, "subagents info", target=run_id)
    log = await command(world, world.alice, "subagents log", target=session_key)
    assert log.splitlines()[1:] == ["User: Ancient job", "Assistant: the old answer"]
    refused = await command(world, world.alice, "subagents send", target=session_key, message="still there?")
    assert refused == (
        f"⚠️ Session {session_key} was archived 2h0m ago and takes no more messages. Spawn a new "
        "sub-agent to go on (its transcript stays readable with /subagents log)."
    )
    assert world.rows("SELECT COUNT(*) FROM runs") == [(1,)]


async def test_info_shows_what_a_finished_and_a_killed_run_spent(world):
    """Requests, tool calls, tokens and the estimated cost, kept for a killed run too."""
    world.extra_config = (
        "[agents.defaults.subagents]\nmax_spawn_depth = 2\n"
        '[pricing."fake/gpt-4o-mini"]\ninput_per_mtok = 1000\noutput_per_mtok = 2000\n'
    )
    world.llm.reply("first result", prompt_tokens=1200, completion_tokens=300)
    await world.start_bot()
    done_id = await spawn(world, task="Finish quickly")
    await world.discord.wait_for_message(world.channel, announcement_for(done_id))

    done = await command(world, world.alice, "subagents info", target="1")
    assert "Usage: 1 request • 0 tool calls • tokens 1.5k (in 1.2k / out 300) • est. cost $1.80" in done.splitlines()

    world.llm.tool_call("sessions_list", prompt_tokens=1000, completion_tokens=100)
    world.llm.hang()
    killed_id = await spawn(world, task="Take your time")
    await world.llm.wait_hanging(1)
    assert await command(world, world.alice, "subagents kill", target="1") == "killed Take your time."

    killed = await command(world, world.alice, "subagents info", target=killed_id)
    assert "Status: killed" in killed.splitlines()
    assert "Usage: 1 request • 1 tool call • tokens 1.1k (in 1.0k / out 100) • est. cost $1.20" in killed.splitlines()
