"""An agent's tools act with the authority of the person whose turn is running, never more: over the wire, a
member who mentions the bot cannot have the channel's main agent kill, steer or message another member's run."""

from __future__ import annotations

import json

from tests.fakes.openai_server import Step
from tests.harness import announcement_for
from tests.polling import eventually
from tests.test_wire_control import command, member, run_id_full, spawn
from tests.test_wire_delegate import AGENTS, ANALYST, BOSS


def tool_result(body) -> dict:
    """The last tool result the model was shown, parsed."""
    return json.loads(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])


def echo_tool_result(body) -> str:
    return "tool said: " + json.dumps(tool_result(body), sort_keys=True)


async def mention(world, user, text: str) -> dict:
    """``user`` mentions the bot; returns the main agent's reply."""
    sent = await world.discord.send_user_message(user, world.channel, f"<@{world.discord.bot_user_id}> {text}")
    return await world.discord.wait_for_message(
        world.channel, lambda m: (m.get("message_reference") or {}).get("message_id") == sent["id"]
    )


def refusal(world, action: str, label: str) -> str:
    return f"You can only {action} runs you started; {label} belongs to <@{world.alice.id}>. Ask them or a moderator."


async def test_another_members_mention_cannot_kill_or_steer_a_run_through_the_main_agent(world):
    world.llm.hang()  # Alice's sub-agent, running
    world.llm.enqueue(Step.calls([("subagents", {"action": "kill", "target": "1"})]))
    world.llm.respond_with(echo_tool_result)
    world.llm.enqueue(Step.calls([("subagents", {"action": "steer", "target": "1", "message": "stop and do X"})]))
    world.llm.respond_with(echo_tool_result)
    await world.start_bot()
    run_id = await spawn(world, task="Alice's research")
    await world.llm.wait_hanging(1)
    bob = member(world, "bob")

    killed = await mention(world, bob, "kill #1")
    steered = await mention(world, bob, "tell #1 to stop and do X")

    assert killed["content"] == "tool said: " + json.dumps(
        {"status": "forbidden", "error": refusal(world, "kill", "Alice's research")}, sort_keys=True
    )
    assert steered["content"] == "tool said: " + json.dumps(
        {"status": "forbidden", "error": refusal(world, "steer", "Alice's research")}, sort_keys=True
    )
    assert world.rows("SELECT status FROM runs WHERE id = ?", (run_id_full(world, run_id),)) == [("running",)]
    assert world.rows("SELECT COUNT(*) FROM run_inbox") == [(0,)]  # no steer is waiting for Alice's run
    assert world.rows("SELECT COUNT(*) FROM audit_log") == [(0,)]
    # Alice's own command still works: nothing about her run changed hands
    assert await command(world, world.alice, "subagents kill", target="1") == "killed Alice's research."


async def test_a_moderators_turn_may_kill_through_the_main_agent_and_is_audited(world):
    world.llm.hang()
    world.llm.enqueue(Step.calls([("subagents", {"action": "kill", "target": "1"})]))
    world.llm.respond_with(echo_tool_result)
    await world.start_bot()
    run_id = await spawn(world, task="Alice's research")
    await world.llm.wait_hanging(1)
    mod = member(world, "mod", manage_messages=True)

    reply = await mention(world, mod, "kill #1")

    assert reply["content"] == "tool said: " + json.dumps(
        {"result": "killed Alice's research.", "status": "ok"}, sort_keys=True
    )
    full = run_id_full(world, run_id)
    assert world.rows("SELECT status FROM runs WHERE id = ?", (full,)) == [("killed",)]
    assert world.rows("SELECT guild_id, actor_user_id, target_user_id, action, run_id, detail FROM audit_log") == [
        (world.guild.id, mod.id, world.alice.id, "kill", full, "by an agent's tool; kill")
    ]


async def test_sessions_send_acts_only_for_the_owner_and_the_follow_up_stays_theirs_after_a_restart(world):
    world.llm.reply("first answer")
    await world.start_bot()
    run_id = await spawn(world, task="Alice's research")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    session_key = world.rows("SELECT session_key FROM runs WHERE id = ?", (run_id_full(world, run_id),))[0][0]
    await world.stop_bot(world.bots[-1])
    bob = member(world, "bob")

    world.llm.enqueue(Step.calls([("sessions_send", {"sessionKey": session_key, "message": "Bob's order"})]))
    world.llm.respond_with(echo_tool_result)
    await world.start_bot()
    refused = await mention(world, bob, "tell Alice's researcher to do my job")

    assert refused["content"] == "tool said: " + json.dumps(
        {"status": "forbidden", "error": refusal(world, "send", "Alice's research")}, sort_keys=True
    )
    assert world.rows("SELECT COUNT(*) FROM runs WHERE session_key = ?", (session_key,)) == [(1,)]

    world.llm.enqueue(Step.calls([("sessions_send", {"sessionKey": session_key, "message": "And the budget?"})]))
    world.llm.respond_with(echo_tool_result)
    world.llm.reply("the follow-up answer")
    accepted = await mention(world, world.alice, "ask my researcher about the budget")

    assert '"delivered": "started a follow-up run"' in accepted["content"]
    await eventually(
        lambda: (
            world.rows("SELECT COUNT(*) FROM runs WHERE session_key = ? AND status = 'completed'", (session_key,))
            == [(2,)]
        ),
        timeout=10,
        describe="Alice's follow-up run completed",
    )
    owners = world.rows("SELECT requester_user_id FROM runs WHERE session_key = ?", (session_key,))
    assert owners == [(world.alice.id,), (world.alice.id,)]


async def test_runs_an_agent_started_in_a_members_turn_stay_that_members(world):
    def script(body):
        if "You research things." in json.dumps(body["messages"][0]):
            return Step.hang()  # the child Bob's turn spawns
        last = body["messages"][-1]
        if last["role"] == "tool":
            return "spawned it" if "sessions_spawn" in json.dumps(body["messages"][-2]) else echo_tool_result(body)
        if "spawn a researcher" in last["content"]:
            return Step.calls([("sessions_spawn", {"agentId": "researcher", "task": "Bob's errand"})])
        return Step.calls([("subagents", {"action": "kill", "target": "1"})])

    world.extra_config = '[agents.defaults.subagents]\nallow_agents = ["*"]\n'
    world.llm.default = script
    await world.start_bot()
    bob = member(world, "bob")

    assert (await mention(world, bob, "spawn a researcher for me"))["content"] == "spawned it"
    await world.llm.wait_hanging(1)
    child = world.rows("SELECT id, requester_user_id FROM runs WHERE kind = 'spawn'")
    assert [owner for _, owner in child] == [bob.id]

    by_alice = await mention(world, world.alice, "kill #1")
    assert by_alice["content"] == "tool said: " + json.dumps(
        {
            "status": "forbidden",
            "error": f"You can only kill runs you started; Bob's errand belongs to <@{bob.id}>. Ask them or a "
            "moderator.",
        },
        sort_keys=True,
    )
    assert world.rows("SELECT status FROM runs WHERE kind = 'spawn'") == [("running",)]

    by_bob = await mention(world, bob, "kill #1")
    assert by_bob["content"] == "tool said: " + json.dumps(
        {"result": "killed Bob's errand.", "status": "ok"}, sort_keys=True
    )
    assert world.rows("SELECT status FROM runs WHERE kind = 'spawn'") == [("killed",)]
    assert world.rows("SELECT COUNT(*) FROM audit_log") == [(0,)]


async def test_a_background_delegation_is_cancelled_only_in_its_owners_turns(world):
    world.extra_config = AGENTS
    world.llm.tool_call(
        "delegate", {"agent": "analyst", "prompt": "Audit every invoice", "background": True}, model=BOSS
    )
    world.llm.reply("Started the audit in the background.", model=BOSS)
    world.llm.hang(model=ANALYST)
    await world.start_bot()
    assert (await mention(world, world.alice, "audit the invoices"))[
        "content"
    ] == "Started the audit in the background."
    [(task_id,)] = world.rows("SELECT task_id FROM delegate_tasks")
    await world.llm.wait_hanging()
    bob = member(world, "bob")

    world.llm.tool_call("delegate", {"action": "cancel_task", "task_id": task_id}, model=BOSS)
    world.llm.respond_with(echo_tool_result, model=BOSS)
    refused = await mention(world, bob, "cancel the audit")

    assert refused["content"] == "tool said: " + json.dumps(
        {"error": refusal(world, "kill", f"task {task_id}"), "output": "", "success": False}, sort_keys=True
    )
    assert world.rows("SELECT status FROM delegate_tasks") == [("running",)]

    world.llm.tool_call("delegate", {"action": "cancel_task", "task_id": task_id}, model=BOSS)
    world.llm.respond_with(echo_tool_result, model=BOSS)
    cancelled = await mention(world, world.alice, "cancel the audit")

    assert f"Task '{task_id}' cancelled" in cancelled["content"]
    await world.until("SELECT status FROM delegate_tasks", [("cancelled",)])
    assert world.rows("SELECT COUNT(*) FROM audit_log") == [(0,)]


async def test_a_moderators_stop_of_another_members_turn_is_audited(world):
    world.llm.hang()
    await world.start_bot()
    await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> think hard")
    await world.llm.wait_hanging(1)
    bob, mod = member(world, "bob"), member(world, "mod", manage_threads=True)

    assert await command(world, bob, "stop") == "Nothing of yours is running in this conversation."
    assert world.rows("SELECT status FROM runs") == [("running",)]
    assert await command(world, mod, "stop") == "⚙️ Agent was aborted."
    [turn] = world.rows("SELECT id FROM runs")
    assert world.rows("SELECT guild_id, actor_user_id, target_user_id, action, run_id FROM audit_log") == [
        (world.guild.id, mod.id, world.alice.id, "kill", turn[0])
    ]
