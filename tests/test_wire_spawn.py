"""/subagents spawn over the wire: real discord.py client ↔ fake Discord, real pydantic-ai ↔ fake OpenAI."""

from __future__ import annotations

import re

import pytest

from tests.harness import API_KEY, announcement_for, spawned_run_id

SPAWNED = re.compile(
    r"^Spawned subagent researcher \(session agent:researcher:subagent:[0-9a-f-]{36}, run [0-9a-f]{8}\)\.$"
)


async def spawn(world, **options):
    options = {"agent": "researcher", "task": "Summarise the plan", **options}
    inter = await world.discord.slash(world.alice, world.channel, "subagents spawn", **options)
    ack = await world.discord.wait_ack(inter)
    reply = await world.discord.wait_followup(inter)
    return inter, ack, reply


async def test_spawn_acknowledges_then_announces_result_with_stats(world):
    world.llm.reply("The plan has **three** steps.\n@everyone look!", prompt_tokens=1000, completion_tokens=200)
    await world.start_bot()

    _inter, ack, reply = await spawn(world)

    assert ack.status_code == 200 and ack.type == 5 and ack.ephemeral
    assert ack.elapsed < 3
    assert SPAWNED.match(reply["content"]), reply["content"]
    assert reply["flags"] & 64
    run_id = spawned_run_id(reply)

    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    content = announcement["content"]
    assert content.startswith(
        f"<@{world.alice.id}> ✅ Subagent **researcher** (run `{run_id}`): completed successfully"
    )
    assert "The plan has **three** steps." in content
    # gpt-4o-mini has a known price: 1000 × $0.15/M + 200 × $0.60/M = $0.00027
    assert re.search(r"-# runtime \d+s • tokens 1\.2k \(in 1\.0k / out 200\) • est\. cost \$0\.0003$", content), content
    mentions = world.discord.message_meta(announcement).allowed_mentions
    assert mentions["parse"] == [] and [int(u) for u in mentions["users"]] == [world.alice.id]
    assert announcement["mention_everyone"] is False

    request = world.llm.requests[0]
    assert request["headers"]["authorization"] == f"Bearer {API_KEY}"
    assert request["messages"][-1] == {"role": "user", "content": "Summarise the plan"}
    assert world.rows("SELECT status FROM runs") == [("completed",)]
    assert len(world.bot_messages()) == 1


async def test_unknown_price_stays_unknown(world):
    world.llm.reply("done", prompt_tokens=10, completion_tokens=5)
    await world.start_bot()

    _, _, reply = await spawn(world, model="fake/local-llama")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(spawned_run_id(reply)))

    assert announcement["content"].endswith("-# runtime 0s • tokens 15 (in 10 / out 5)")
    assert world.llm.requests[0]["model"] == "local-llama"


async def test_model_error_is_announced_as_failed(world):
    world.llm.error(500, "upstream exploded")
    world.llm.error(500, "upstream exploded")  # the SDK retries once
    await world.start_bot()

    _, _, reply = await spawn(world)
    run_id = spawned_run_id(reply)

    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "❌ Subagent **researcher**" in announcement["content"]
    assert "failed: model provider answered HTTP 500: upstream exploded" in announcement["content"]
    assert world.rows("SELECT status FROM runs") == [("failed",)]


async def test_run_timeout_is_announced_as_timed_out(world):
    world.extra_config = "[agents.defaults.subagents]\nrun_timeout_seconds = 1\n"
    world.llm.hang()
    await world.start_bot()

    _, _, reply = await spawn(world)
    run_id = spawned_run_id(reply)

    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id), timeout=15)
    assert "⏱️ Subagent **researcher**" in announcement["content"]
    assert f"(run `{run_id}`): timed out" in announcement["content"]
    assert "(no output)" in announcement["content"]
    assert world.rows("SELECT status FROM runs") == [("timed_out",)]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"task": "   "}, "⚠️ Task must not be empty."),
        ({"agent": "ghost"}, '⚠️ Unknown agentId "ghost". Configured agents: main, researcher.'),
        ({"agent": "Bad Agent!"}, '⚠️ Invalid agentId "Bad Agent!". Agent IDs must match'),
        ({"task": "x" * 6000}, "⚠️ Task is too long (6,000 characters; the limit is 4,000)."),
        ({"model": "nowhere/gpt-9"}, "⚠️ Unknown model 'nowhere/gpt-9': no provider named 'nowhere' is configured"),
        ({"model": "gpt-9"}, "⚠️ Model 'gpt-9' must look like '<provider>/<model>'"),
        ({"thinking": "high"}, "⚠️ Model fake/gpt-4o-mini does not support thinking levels"),
    ],
)
async def test_bad_input_gets_a_specific_ephemeral_error_and_no_run(world, options, expected):
    await world.start_bot()

    _, ack, reply = await spawn(world, **options)

    assert ack.status_code == 200 and ack.ephemeral
    assert reply["content"].startswith(expected), reply["content"]
    assert reply["flags"] & 64
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]
    assert world.llm.requests == []
    assert world.bot_messages() == []


async def test_long_result_is_split_with_fences_balanced(world):
    background = "\n".join(f"note {i}: the steps below build on each other" for i in range(25))
    code = "\n".join(f"step_{i} = compute({i})  # keep going" for i in range(50))  # fits one message: not a file
    world.llm.reply(f"{background}\nHere is the code:\n```python\n{code}\n```\nDone.")
    await world.start_bot()

    _, _, reply = await spawn(world)
    run_id = spawned_run_id(reply)
    await world.discord.wait_for_message(
        world.channel, lambda m: m["content"].startswith("-# runtime") or "\n-# runtime" in m["content"]
    )

    parts = world.bot_messages()
    assert len(parts) >= 2
    assert announcement_for(run_id)(parts[0]) and parts[0]["content"].startswith(f"<@{world.alice.id}>")
    assert all(len(p["content"]) <= 2000 and p["content"].count("```") % 2 == 0 for p in parts)
    assert parts[1]["content"].startswith("```python\n")
    text = "\n".join(p["content"] for p in parts)
    assert all(f"step_{i} = compute({i})" in text for i in range(50))
    assert len({world.discord.message_meta(p).nonce for p in parts}) == len(parts)


async def test_very_long_result_arrives_as_an_attachment(world):
    body = "\n".join(f"finding {i}: " + "detail " * 12 for i in range(150))
    world.llm.reply(body)
    await world.start_bot()

    _, _, reply = await spawn(world)
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(spawned_run_id(reply)))

    assert f"full result attached as result.md, {len(body):,} characters" in announcement["content"]
    assert len(announcement["content"]) <= 2000
    assert world.discord.message_files(announcement) == [("result.md", body.encode())]
    assert len(world.bot_messages()) == 1


async def test_without_any_provider_the_offline_model_answers(world):
    world.offline = True
    await world.start_bot()

    _, _, reply = await spawn(world, task="count the stars")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(spawned_run_id(reply)))

    assert "completed successfully" in announcement["content"]
    assert "No model provider is configured, so the built-in offline model is answering." in announcement["content"]
    assert "You said: count the stars" in announcement["content"]
    assert world.rows("SELECT model FROM runs") == [("offline/builtin",)]
    assert world.llm.requests == []


async def test_unexpected_failure_is_an_ephemeral_apology_not_a_traceback(world):
    bot = await world.start_bot()
    await bot._db.close()  # storage goes away under the running bot

    _, ack, reply = await spawn(world)

    assert ack.ephemeral
    assert reply["content"] == "⚠️ Something went wrong running /subagents spawn. It has been logged."
    assert reply["flags"] & 64
    assert world.bot_messages() == []


async def test_a_disabled_agent_cannot_be_spawned_or_picked(world):
    world.extra_config = "enabled = false\n"  # continues the base config's [agents.list.researcher] table
    await world.start_bot()

    _, ack, reply = await spawn(world, agent="researcher")
    choices = await world.discord.autocomplete(world.alice, world.channel, "subagents spawn", focused="agent")

    assert ack.ephemeral and reply["flags"] & 64
    assert reply["content"] == '⚠️ Agent "researcher" is disabled (agents.list.researcher.enabled = false).'
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]
    assert [choice["value"] for choice in choices] == ["main"]
