"""``delegate`` seen from Discord: the channel gets the asking agent's answer built on the delegate's result (never
the delegate's own post), ``/subagents list`` shows a delegation with its kind, agent and task id, and a
background task killed from ``/subagents`` reads as cancelled to the agent that started it."""

from __future__ import annotations

import json

from tests.test_wire_control import command

AGENTS = """
[agents]
default_agent = "boss"
[agents.list.boss]
risk_profile = "team"
[agents.list.analyst]
model = "fake/gpt-4o"
system_prompt = "You analyse numbers."
risk_profile = "team"
[risk_profiles.team]
delegation_policy = { mode = "allow" }
"""
BOSS, ANALYST = "gpt-4o-mini", "gpt-4o"


def answers(asked: dict):
    return lambda m: (m.get("message_reference") or {}).get("message_id") == asked["id"]


async def ask(world, text: str) -> dict:
    asked = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> {text}")
    return await world.discord.wait_for_message(world.channel, answers(asked))


def tool_result(request: dict) -> dict:
    return json.loads(request["messages"][-1]["content"])


def last_of(world, model: str) -> dict:
    """The last request to ``model`` (a background delegate's own request may arrive after its caller's)."""
    return [request for request in world.llm.requests if request["model"] == model][-1]


async def test_an_agent_answers_with_its_delegates_result_and_the_list_shows_the_delegation(world):
    world.extra_config = AGENTS
    world.llm.tool_call("delegate", {"agent": "analyst", "prompt": "Sum up Q3 revenue"}, model=BOSS)
    world.llm.reply("Revenue grew 12% in Q3.", model=ANALYST)
    world.llm.reply("My analyst says: revenue grew 12% in Q3.", model=BOSS)
    await world.start_bot()

    reply = await ask(world, "how did Q3 go?")
    assert reply["content"] == "My analyst says: revenue grew 12% in Q3."
    analyst_request = next(r for r in world.llm.requests if r["model"] == ANALYST)
    assert analyst_request["messages"][-1] == {"role": "user", "content": "Sum up Q3 revenue"}
    assert "You analyse numbers." in analyst_request["messages"][0]["content"]
    assert not any("how did Q3 go" in str(m.get("content")) for m in analyst_request["messages"])
    assert tool_result(last_of(world, BOSS)) == {
        "success": True,
        "output": "[Agent 'analyst' (fake/gpt-4o)]\nRevenue grew 12% in Q3.",
        "error": None,
    }
    await world.quiescent()
    posted = [m["content"] for m in world.bot_messages()]
    assert posted == [reply["content"]]  # the delegate itself posts nothing
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at") == [
        ("chat", "completed"),
        ("spawn", "completed"),
    ]
    [(task_id, agent, background, status)] = world.rows("SELECT task_id, agent, background, status FROM delegate_tasks")
    assert (agent, background, status) == ("analyst", 0, "completed")

    listing = await command(world, world.alice, "subagents list")
    assert f"1. Sum up Q3 revenue [delegate analyst, task {task_id[:8]}] (fake/gpt-4o" in listing
    info = await command(world, world.alice, "subagents info", target="1")
    assert f"Kind: delegate analyst, task {task_id} (bounded)" in info


async def test_a_background_task_is_listed_killed_from_discord_and_its_caller_reads_cancelled(world):
    world.extra_config = AGENTS
    world.llm.tool_call(
        "delegate", {"agent": "analyst", "prompt": "Audit every invoice", "background": True}, model=BOSS
    )
    world.llm.reply("Started the audit in the background.", model=BOSS)
    world.llm.hang(model=ANALYST)
    await world.start_bot()

    started = await ask(world, "audit the invoices")
    assert started["content"] == "Started the audit in the background."
    [(task_id,)] = world.rows("SELECT task_id FROM delegate_tasks")
    assert tool_result(last_of(world, BOSS))["output"] == (
        f"Background task started for agent 'analyst'.\ntask_id: {task_id}\n"
        f"Use action='check_result' with task_id='{task_id}' to retrieve the result."
    )
    await world.llm.wait_hanging()
    await world.until("SELECT status FROM delegate_tasks", [("running",)])
    listing = await command(world, world.alice, "subagents list")
    assert f"1. Audit every invoice [delegate analyst, task {task_id[:8]}] (fake/gpt-4o" in listing
    assert "running" in listing.splitlines()[2]
    await world.until("SELECT COUNT(*) FROM status_messages", [(1,)])
    [status] = [m for m in world.discord.channel_messages(world.channel) if m["id"] in world.status_message_ids()]
    assert status["content"].startswith("🔄 **Audit every invoice [delegate analyst]** · running")

    assert await command(world, world.alice, "subagents kill", target="1") == "killed Audit every invoice."
    await world.until("SELECT status, error FROM delegate_tasks", [("cancelled", "Cancelled by user request")])

    world.llm.tool_call("delegate", {"action": "check_result", "task_id": task_id}, model=BOSS)
    world.llm.reply("The audit was cancelled.", model=BOSS)
    second = await ask(world, "how is the audit going?")
    assert second["content"] == "The audit was cancelled."
    checked = tool_result(last_of(world, BOSS))
    assert (checked["success"], checked["error"]) == (False, "Cancelled by user request")
    assert json.loads(checked["output"])["status"] == "cancelled"
    await world.quiescent()
    assert [m["content"] for m in world.bot_messages()] == [started["content"], second["content"]]


async def test_stop_reaches_a_running_background_task(world):
    world.extra_config = AGENTS
    world.llm.tool_call("delegate", {"agent": "analyst", "prompt": "Crawl the archive", "background": True}, model=BOSS)
    world.llm.reply("Crawling in the background.", model=BOSS)
    world.llm.hang(model=ANALYST)
    await world.start_bot()

    await ask(world, "crawl the archive")
    await world.llm.wait_hanging()
    await world.until("SELECT status FROM delegate_tasks", [("running",)])
    assert await command(world, world.alice, "stop") == "⚙️ Agent was aborted. Stopped 1 sub-agent."
    await world.until("SELECT status, error FROM delegate_tasks", [("cancelled", "Cancelled by user request")])
    await world.quiescent()
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at") == [
        ("chat", "completed"),
        ("spawn", "killed"),
    ]


SPENDING = """
[agents]
default_agent = "boss"
[agents.defaults.subagents]
max_spawn_depth = 2
[agents.list.boss]
risk_profile = "team"
runtime_profile = "thrifty"
delegates = [{ agent = "analyst", mode = "MODE" }]
[agents.list.analyst]
model = "fake/gpt-4o"
risk_profile = "team"
runtime_profile = "looping"
[risk_profiles.team]
delegation_policy = { mode = "allow" }
[runtime_profiles.thrifty]
max_cost_per_day_cents = 1
[runtime_profiles.looping]
agentic = true
[pricing."fake/gpt-4o-mini"]
input_per_mtok = 0
output_per_mtok = 0
[pricing."fake/gpt-4o"]
input_per_mtok = 10
output_per_mtok = 0
"""
OVER_BOSS_CAP = "Budget exceeded: $0.0200 of $0.01 Day limit. Cannot make further API calls until the budget resets."


async def test_a_bounded_delegates_spending_stops_at_its_callers_cost_cap(world):
    world.extra_config = SPENDING.replace("MODE", "bounded")
    world.llm.tool_call("delegate", {"agent": "analyst", "prompt": "Crunch everything"}, model=BOSS)
    world.llm.tool_call("sessions_list", {}, model=ANALYST, prompt_tokens=2000)  # $0.02 of boss's $0.01 a day
    await world.start_bot()

    reply = await ask(world, "crunch the numbers")
    assert OVER_BOSS_CAP in reply["content"]  # boss's own turn stops too: the money was boss's
    assert [request["model"] for request in world.llm.requests] == [BOSS, ANALYST]  # no second analyst request
    assert world.rows("SELECT status, error FROM delegate_tasks") == [
        ("failed", f"Agent 'analyst' failed: {OVER_BOSS_CAP}")
    ]
    assert world.rows("SELECT agent_id, cost_nanousd FROM usage_daily WHERE cost_nanousd > 0") == [("boss", 20_000_000)]


async def test_an_independent_delegate_spends_on_its_own_profile(world):
    world.extra_config = SPENDING.replace("MODE", "independent")
    world.llm.tool_call("delegate", {"agent": "analyst", "prompt": "Crunch everything"}, model=BOSS)
    world.llm.tool_call("sessions_list", {}, model=ANALYST, prompt_tokens=2000)
    world.llm.reply("Everything crunched.", model=ANALYST, prompt_tokens=2000)
    world.llm.reply("All crunched.", model=BOSS)
    await world.start_bot()

    reply = await ask(world, "crunch the numbers")
    assert reply["content"] == "All crunched."  # $0.04 of the analyst's own $5.00 a day; boss spent nothing
    assert world.rows("SELECT status FROM delegate_tasks") == [("completed",)]
    assert world.rows("SELECT agent_id, cost_nanousd FROM usage_daily WHERE cost_nanousd > 0") == [
        ("analyst", 40_000_000)
    ]
