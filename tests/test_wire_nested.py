"""Nested sub-agents over the wire: a mention makes the main agent spawn a planner, which fans out to three
workers and synthesises; the channel sees the main agent's reply and exactly one final answer, in the main agent's
words (the announce chain: each level reads only its direct children's completions)."""

from __future__ import annotations

from tests.fakes.openai_server import Step

EVENT = "[Internal task completion event]"

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
    if EVENT in str(last["content"]):  # the main agent tells the planner's result
        [plan] = [line for line in last["content"].splitlines() if line.startswith("Final plan")]
        return f"The planner is done. {plan}"
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

    told = f"<@{world.alice.id}> The planner is done. "
    final = await world.discord.wait_for_message(world.channel, lambda m: told in m["content"], timeout=20)
    assert final["content"] == told + "Final plan: result of part 1; result of part 2; result of part 3"

    await world.quiescent()  # nothing else may follow: workers report to the planner, the planner to the main agent
    messages = world.bot_messages()
    assert len(messages) == 2
    assert not any("INTERNAL" in m["content"] or "untrusted" in m["content"].lower() for m in messages)
    assert not any("✅ Subagent" in m["content"] for m in messages)  # no template: the main agent told it
    statuses = world.rows(
        "SELECT s.agent_id, r.kind, r.status FROM runs r JOIN sessions s ON s.key = r.session_key ORDER BY r.created_at"
    )
    assert [row for row in statuses if row[0] != "worker"] == [
        ("main", "chat", "completed"),
        ("planner", "spawn", "completed"),
        ("main", "chat", "completed"),  # the voice turn, after the planner's synthesis
    ]
    assert [row[2] for row in statuses if row[0] == "worker"] == ["completed"] * 3


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
        if EVENT in str(last["content"]):
            return "The planner says: Planned."
        if last["role"] == "tool":
            return "On it."
        return Step.calls([("sessions_spawn", {"agentId": "planner", "task": "Plan", "label": "Planner"})])

    world.llm.default = pair
    await world.start_bot()
    await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> plan")
    final = await world.discord.wait_for_message(
        world.channel, lambda m: m["content"] == f"<@{world.alice.id}> The planner says: Planned.", timeout=20
    )

    [(worker_key, worker_run)] = world.rows(
        "SELECT s.key, r.id FROM runs r JOIN sessions s ON s.key = r.session_key WHERE s.agent_id = 'worker'"
    )
    events = [
        message["content"]
        for body in world.llm.requests
        if "ROLE=planner" in body["body"]["messages"][0]["content"]
        for message in body["body"]["messages"]
        if message["role"] == "user" and EVENT in str(message["content"])
    ]
    assert events, "the planner read its worker's completion"
    lines = events[-1].splitlines()
    assert f"session_key: {worker_key}" in lines and f"run_id: {worker_run}" in lines
    [stats] = [line for line in lines if line.startswith("Stats: ")]
    assert stats.startswith("Stats: runtime ") and " • tokens " in stats
    assert stats.endswith(f" • session_key {worker_key} • run_id {worker_run}")
    assert worker_key not in final["content"] and "session_key" not in final["content"]  # people's line is short
