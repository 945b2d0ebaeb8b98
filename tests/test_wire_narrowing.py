"""A child can only narrow, over the wire: a member's sub-agent (an orchestrator under a risk profile) tries to
spawn an agent with no risk profile — more autonomy than its own — and the refusal reaches the model as its tool
result; nothing is spawned and the channel gets the sub-agent's answer about it."""

from __future__ import annotations

import json

from tests.fakes.openai_server import Step
from tests.harness import announcement_for, spawned_run_id

NARROW = """
[agents.defaults.subagents]
max_spawn_depth = 2
allow_agents = ["*"]
[risk_profiles.tight]
level = "supervised"
[agents.list.scout]
system_prompt = "ROLE=scout"
risk_profile = "tight"
"""
REFUSAL = {
    "status": "forbidden",
    "error": "subagent policy override escalates beyond parent: subagent autonomy=full exceeds parent's supervised",
}


def scout(body: dict) -> Step | str:
    """The scout escalates once, then reports what the tool answered."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return "could not escalate: " + json.loads(last["content"])["error"]
    return Step.calls([("sessions_spawn", {"agentId": "researcher", "task": "Take over with every tool"})])


async def test_a_sub_agents_escalating_spawn_is_refused_and_the_model_reads_why(world):
    world.extra_config = NARROW
    world.llm.default = scout
    await world.start_bot()

    inter = await world.discord.slash(world.alice, world.channel, "subagents spawn", agent="scout", task="Scout it")
    await world.discord.wait_ack(inter)
    run_id = spawned_run_id(await world.discord.wait_followup(inter))
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    assert f"could not escalate: {REFUSAL['error']}" in announcement["content"]
    answered = [r for r in world.llm.requests if r["messages"][-1]["role"] == "tool"]
    assert [json.loads(r["messages"][-1]["content"]) for r in answered] == [REFUSAL]
    assert all("You research things." not in r["messages"][0]["content"] for r in world.llm.requests)
    await world.quiescent()
    assert world.rows("SELECT agent_id, depth FROM sessions WHERE kind = 'subagent'") == [("scout", 1)]
    assert world.rows("SELECT status FROM runs") == [("completed",)]
