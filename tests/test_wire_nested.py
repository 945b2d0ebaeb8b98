"""Nested sub-agents over the wire: a mention makes the main agent spawn a planner, which fans out to three
workers and synthesises; the channel sees the main agent's reply and exactly one final answer."""

from __future__ import annotations

from tests.fakes.openai_server import Step
from tests.harness import announcement_for

NESTED = """
[agents.defaults.subagents]
max_spawn_depth = 2
allow_agents = ["*"]
[agents.list.planner]
system_prompt = "ROLE=planner"
[agents.list.worker]
system_prompt = "ROLE=worker"
"""


def team(body: dict) -> Step | str:
    """The fake model plays each agent according to its system prompt."""
    messages = body["messages"]
    system, last = messages[0]["content"], messages[-1]
    if "ROLE=planner" in system:
        # Like a model following the spawn note: the plan comes once all three results have arrived, whether
        # some reached the planner during its turn and the rest when it was woken, or all at once.
        results = sorted(
            line
            for message in messages
            if message["role"] == "user" and isinstance(message["content"], str)
            for line in message["content"].splitlines()
            if line.startswith("result of")
        )
        if len(results) == 3:
            return "Final plan: " + "; ".join(results)
        if last["role"] == "tool" or results:
            return "Waiting for my workers."
        return Step.calls([("sessions_spawn", {"agentId": "worker", "task": f"part {i}"}) for i in (1, 2, 3)])
    if "ROLE=worker" in system:
        return f"result of {messages[1]['content']}"
    if last["role"] == "tool":
        return "On it: the planner is working."
    return Step.calls(
        [("sessions_spawn", {"agentId": "planner", "task": "Plan the launch", "label": "Launch planner"})]
    )


async def test_mention_to_planner_to_three_workers_gives_one_final_answer(world):
    world.extra_config = NESTED
    world.llm.default = team
    await world.start_bot()
    bot_id = world.discord.bot_user_id

    mention = await world.discord.send_user_message(world.alice, world.channel, f"<@{bot_id}> plan our launch")
    reply = await world.discord.wait_for_message(
        world.channel, lambda m: (m.get("message_reference") or {}).get("message_id") == mention["id"]
    )
    assert reply["content"] == "On it: the planner is working."

    announced = f"<@{world.alice.id}> ✅ Subagent **Launch planner**"  # not its status message, which names it too
    final = await world.discord.wait_for_message(world.channel, lambda m: announced in m["content"], timeout=20)
    assert final["content"].startswith(f"<@{world.alice.id}> ✅ Subagent **Launch planner**")
    assert "Final plan: result of part 1; result of part 2; result of part 3" in final["content"]

    await world.quiescent()  # nothing else may follow: workers report to the planner, not the channel
    messages = world.bot_messages()
    assert len(messages) == 2
    assert not any("INTERNAL" in m["content"] or "untrusted" in m["content"].lower() for m in messages)
    statuses = dict(
        world.rows("SELECT s.agent_id || ':' || r.id, r.status FROM runs r JOIN sessions s ON s.key = r.session_key")
    )
    assert sorted(statuses.values()) == ["completed"] * 5
    run_id = final["content"].split("(run `")[1][:8]
    assert announcement_for(run_id)(final)


async def test_a_requester_reads_its_childs_session_key_and_run_id_in_the_stats_line(world):
    """The completion a planner reads names the child's session and run; the channel's line stays short."""
    world.extra_config = NESTED

    def pair(body: dict) -> Step | str:
        messages = body["messages"]
        system, last = messages[0]["content"], messages[-1]
        if "ROLE=worker" in system:
            return "the worker's part"
        if "ROLE=planner" in system:
            if any("[Internal task completion event]" in str(m["content"]) for m in messages if m["role"] == "user"):
                return "Planned."
            if last["role"] == "tool":
                return "Waiting for my worker."
            return Step.calls([("sessions_spawn", {"agentId": "worker", "task": "part 1"})])
        if last["role"] == "tool":
            return "On it."
        return Step.calls([("sessions_spawn", {"agentId": "planner", "task": "Plan", "label": "Planner"})])

    world.llm.default = pair
    await world.start_bot()
    await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> plan")
    final = await world.discord.wait_for_message(
        world.channel, lambda m: f"<@{world.alice.id}> ✅ Subagent **Planner**" in m["content"], timeout=20
    )
    assert "Planned." in final["content"]

    [(worker_key, worker_run)] = world.rows(
        "SELECT s.key, r.id FROM runs r JOIN sessions s ON s.key = r.session_key WHERE s.agent_id = 'worker'"
    )
    events = [
        message["content"]
        for body in world.llm.requests
        for message in body["body"]["messages"]
        if message["role"] == "user" and "[Internal task completion event]" in str(message["content"])
    ]
    assert events, "the planner read its worker's completion"
    lines = events[-1].splitlines()
    assert f"session_key: {worker_key}" in lines and f"run_id: {worker_run}" in lines
    [stats] = [line for line in lines if line.startswith("Stats: ")]
    assert stats.startswith("Stats: runtime ") and " • tokens " in stats
    assert stats.endswith(f" • session_key {worker_key} • run_id {worker_run}")
    assert worker_key not in final["content"] and "session_key" not in final["content"]  # people's line is short
