"""Provider fallback seen from Discord: a run whose model is down is served by its agent's next model and says so
(stats line, ``/subagents info``, a delegate's header), at that model's price; a rejected key fails the run naming
the variable to check; an exhausted chain lists its failures; nothing a provider said, and no key, reaches Discord
or the model."""

from __future__ import annotations

import json
import re

import pytest

from tests.harness import API_KEY, announcement_for
from tests.test_wire_control import command, spawn
from tests.test_wire_delegate import AGENTS, ask, tool_result

SECRET = "upstream trace 7f3a: db password hunter2"  # what a failing provider says in its error body
NO_WAIT = {"retry-after-ms": "1"}  # the provider asks the SDK to retry at once (it retries once)
PRIMARY, BACKUP = "gpt-4o-mini", "gpt-4o"
SCOUT = """
[agents.list.scout]
system_prompt = "You scout."
fallback_models = ["fake/gpt-4o"]
[pricing."fake/gpt-4o"]
input_per_mtok = 1000
output_per_mtok = 2000
"""


def fail(world, status: int, model: str) -> None:
    """The provider fails ``model``'s request and the SDK's one retry of it."""
    for _ in range(2):
        world.llm.error(status, SECRET, model=model, headers=NO_WAIT)


async def scout_announcement(world) -> str:
    """Start the bot, spawn the scout, and return its announcement."""
    world.extra_config = SCOUT
    await world.start_bot()
    run_id = await spawn(world, agent="scout", task="Scout the area")
    return (await world.discord.wait_for_message(world.channel, announcement_for(run_id)))["content"]


def everything_posted(world) -> str:
    return "\n".join(m["content"] for m in world.discord.channel_messages(world.channel))


@pytest.mark.parametrize("status", [500, 429])
async def test_a_dead_primary_falls_back_and_the_announcement_names_the_model_that_served(world, status):
    fail(world, status, PRIMARY)
    world.llm.reply("Scouted: all clear.", model=BACKUP)

    content = await scout_announcement(world)

    assert "completed successfully" in content and "Scouted: all clear." in content
    # priced at fake/gpt-4o's configured price: 10 × $1000/M + 5 × $2000/M
    assert re.search(
        r"\n-# runtime \d+s • tokens 15 \(in 10 / out 5\) • est\. cost \$0\.02 • served by fake/gpt-4o$", content
    )
    assert [r["model"] for r in world.llm.requests] == [PRIMARY, PRIMARY, BACKUP]
    await world.quiescent()
    assert world.rows("SELECT model, served_model, status FROM runs") == [
        ("fake/gpt-4o-mini", "fake/gpt-4o", "completed")
    ]
    info = await command(world, world.alice, "subagents info", target="1")
    assert "Model: fake/gpt-4o-mini (served by fake/gpt-4o)" in info.splitlines()
    assert "hunter2" not in everything_posted(world) + info


async def test_a_rejected_key_fails_the_run_naming_the_variable_and_is_not_tried_elsewhere(world):
    world.llm.error(401, f"Incorrect API key provided: {API_KEY}. {SECRET}", model=PRIMARY)

    content = await scout_announcement(world)

    assert (
        "failed: model provider rejected the API key (401); check the key in TB_TEST_API_KEY "
        "(providers.fake.api_key_env)"
    ) in content
    assert [r["model"] for r in world.llm.requests] == [PRIMARY]
    info = await command(world, world.alice, "subagents info", target="1")
    assert "Model: fake/gpt-4o-mini" in info.splitlines()
    for secret in (API_KEY, "Incorrect API key provided", "hunter2"):
        assert secret not in everything_posted(world) + info


async def test_an_exhausted_chain_is_announced_with_its_failures_in_order(world):
    fail(world, 500, PRIMARY)
    fail(world, 503, BACKUP)

    content = await scout_announcement(world)

    assert (
        "failed: All model providers/models failed after 2 failure event(s). Events:\n"
        "event 1: fake/gpt-4o-mini: server error (HTTP 500)\n"
        "event 2: fake/gpt-4o: server error (HTTP 503)"
    ) in content
    assert "hunter2" not in everything_posted(world)
    await world.quiescent()
    assert world.rows("SELECT status, served_model FROM runs") == [("failed", None)]


async def test_each_agents_requests_carry_its_own_key(world):
    world.extra_config = '[agents.list.scout]\napi_key_env = { fake = "TB_SCOUT_KEY" }\n'
    world.monkeypatch.setenv("TB_SCOUT_KEY", "sk-scout-key")
    await world.start_bot()

    for agent in ("scout", "researcher"):
        await world.discord.wait_for_message(world.channel, announcement_for(await spawn(world, agent=agent)))

    assert [r["headers"]["authorization"] for r in world.llm.requests] == [
        "Bearer sk-scout-key",
        f"Bearer {API_KEY}",
    ]


DELEGATING = AGENTS.replace('model = "fake/gpt-4o"\n', 'model = "fake/gpt-4o"\nfallback_models = ["fake/o3"]\n')


async def test_a_delegate_served_by_its_fallback_says_so_to_the_agent_that_asked(world):
    world.extra_config = DELEGATING
    world.llm.tool_call("delegate", {"agent": "analyst", "prompt": "Sum up Q3 revenue"}, model=PRIMARY)
    fail(world, 500, "gpt-4o")
    world.llm.reply("Revenue grew 12% in Q3.", model="o3")
    world.llm.reply("My analyst says: revenue grew 12% in Q3.", model=PRIMARY)
    await world.start_bot()

    reply = await ask(world, "how did Q3 go?")

    assert reply["content"] == "My analyst says: revenue grew 12% in Q3."
    boss_last = world.llm.requests[-1]
    assert tool_result(boss_last) == {
        "success": True,
        "output": "[Agent 'analyst' (requested: fake/gpt-4o; served: fake/o3)]\nRevenue grew 12% in Q3.\n\n"
        "Warning: The delegated agent recovered through a provider fallback. Provider failure details were logged "
        "and omitted from this result.",
        "error": None,
    }
    assert "hunter2" not in json.dumps(boss_last["messages"])
    await world.quiescent()
    assert world.rows("SELECT model, served_model FROM runs ORDER BY created_at") == [
        ("fake/gpt-4o-mini", "fake/gpt-4o-mini"),
        ("fake/gpt-4o", "fake/o3"),
    ]
