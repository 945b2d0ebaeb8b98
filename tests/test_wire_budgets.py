"""Budgets over the wire: a member over a cap is refused privately with the numbers (a spawn, a mention), a run that
reaches a cap mid-way fails at its next model request and its requester is told, the 80% warning reaches the member
once, and ``/settings budgets`` is for admins only, per server and audited."""

from __future__ import annotations

import re

from tests.fakes.openai_server import Step
from tests.harness import announcement_for
from tests.test_wire_chat import replies_to
from tests.test_wire_control import command, member, spawn

OVER_TOKENS = re.compile(
    r"⚠️ Over budget: your tokens today on this server: 1,205 of 1,000 tokens \(member_tokens_per_day\)\. "
    r"It resets at 00:00 UTC, in (\d+h\d+m|\d+m\d+s|\d+s)\."  # the last hour of the day counts seconds
)


async def test_a_member_over_their_daily_tokens_is_refused_with_the_numbers_and_warned_once(world):
    world.extra_config = "[budgets]\nmember_tokens_per_day = 1000\n"
    world.llm.reply("first result", prompt_tokens=1200, completion_tokens=5)
    await world.start_bot()
    bob = member(world, "bob")

    run_id = await spawn(world, task="Spend a lot")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    warning = await world.discord.wait_for_message(world.channel, lambda m: "⚠️ You have used" in m["content"])
    assert warning["content"].startswith(
        f"<@{world.alice.id}> ⚠️ You have used 120% of your tokens today on this server"
    )
    assert world.discord.message_meta(warning).allowed_mentions["users"] == [world.alice.id]

    refused = await command(world, world.alice, "subagents spawn", agent="researcher", task="More")
    assert OVER_TOKENS.fullmatch(refused), refused
    assert world.rows("SELECT COUNT(*) FROM runs") == [(1,)]
    mention = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> hi")
    answer = await world.discord.wait_for_message(world.channel, replies_to(world, mention))
    assert OVER_TOKENS.fullmatch(answer["content"]), answer["content"]
    assert world.rows("SELECT COUNT(*) FROM runs") == [(1,)]

    assert (await command(world, bob, "subagents spawn", agent="researcher", task="Mine")).startswith("Spawned")
    await world.quiescent()
    warnings = [m for m in world.bot_messages() if "⚠️ You have used" in m["content"]]
    assert len(warnings) == 1  # once a day, and only to the member who crossed it


async def test_a_run_that_reaches_the_cap_mid_way_fails_at_its_next_request_and_its_requester_is_told(world):
    world.extra_config = "[agents.defaults.subagents]\nmax_spawn_depth = 2\n[budgets]\nmember_tokens_per_day = 1000\n"
    world.llm.enqueue(Step.calls([("sessions_list", {})], text="Looked once", prompt_tokens=900, completion_tokens=150))
    await world.start_bot()

    run_id = await spawn(world, task="Keep looking")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "failed: budget exhausted (member_tokens_per_day)" in announcement["content"]
    assert "Looked once" in announcement["content"]  # its partial output
    assert announcement["content"].startswith(f"<@{world.alice.id}>")
    assert len(world.llm.requests) == 1  # the second request was never sent
    assert world.rows("SELECT status, error FROM runs WHERE id LIKE ?", (f"{run_id}%",)) == [
        ("failed", "budget exhausted (member_tokens_per_day)")
    ]


async def test_admins_set_this_servers_caps_members_are_refused_and_the_cap_applies_at_once(world):
    world.extra_config = (
        "[budgets]\nserver_tokens_per_day = 50000\n[session.thread_bindings]\nspawn_subagent_sessions = true\n"
    )
    await world.start_bot()
    admin = member(world, "admin", manage_guild=True)

    assert await command(world, world.alice, "settings budgets", member_runs_per_hour=1) == (
        "⚠️ You need the Manage Server permission to view or change these settings."
    )
    assert world.rows("SELECT COUNT(*) FROM guild_budgets") == [(0,)]

    shown = await command(world, admin, "settings budgets", member_runs_per_hour=1, member_cost_per_day_usd=2.5)
    assert shown.splitlines() == [
        "Updated.",
        "member_runs_per_hour: 1 run (this server)",
        "member_tokens_per_day: no cap (default)",
        "member_cost_per_day_usd: $2.50 (this server)",
        "member_concurrent_runs: 10 runs (default)",
        "server_runs_per_hour: no cap (default)",
        "server_tokens_per_day: 50,000 tokens ([budgets])",
        "server_cost_per_day_usd: no cap (default)",
    ]
    assert world.rows("SELECT actor_user_id, action, detail FROM audit_log") == [
        (admin.id, "budgets", "member_runs_per_hour=1, member_cost_per_day_usd=2.5")
    ]

    await spawn(world, task="The one")
    refused = await command(world, world.alice, "subagents spawn", agent="researcher", task="Two")
    assert refused.startswith(
        "⚠️ Over budget: your runs in the last hour on this server: 1 of 1 run (member_runs_per_hour). One frees up at "
    ), refused
    in_a_thread = await command(world, world.alice, "subagents spawn", agent="researcher", task="Two", thread=True)
    assert in_a_thread.startswith("⚠️ Over budget: your runs in the last hour") and world.discord.threads() == []

    inherited = await command(world, admin, "settings budgets", inherit="member_runs_per_hour")
    assert "member_runs_per_hour: no cap (default)" in inherited.splitlines()
    assert (await command(world, world.alice, "subagents spawn", agent="researcher", task="Two")).startswith("Spawned")


async def test_whole_numbers_are_stored_and_audited_as_typed(world):
    await world.start_bot()
    admin = member(world, "admin", manage_guild=True)

    shown = await command(world, admin, "settings budgets", member_runs_per_hour=100, server_cost_per_day_usd=20.0)
    assert "member_runs_per_hour: 100 runs (this server)" in shown.splitlines()
    assert world.rows("SELECT key, value FROM guild_budgets ORDER BY key") == [
        ("member_runs_per_hour", "100"),
        ("server_cost_per_day_usd", "20"),
    ]
    assert world.rows("SELECT detail FROM audit_log") == [("member_runs_per_hour=100, server_cost_per_day_usd=20",)]


async def test_a_thread_spawn_refused_once_its_thread_is_open_leaves_that_thread_archived(world, monkeypatch):
    """A run admitted between the early check and the admission (another channel, the same member): the spawn is
    refused by the admission and the thread already opened for it is archived, not left empty and open."""
    world.extra_config = (
        "[budgets]\nmember_runs_per_hour = 1\n[session.thread_bindings]\nspawn_subagent_sessions = true\n"
    )
    bot = await world.start_bot()
    await spawn(world, task="The one")

    async def passed(payer, *, top_level):  # as the check saw it, before the first run was admitted
        return None

    monkeypatch.setattr(bot.orchestrator.core.budgets, "check", passed)
    refused = await command(world, world.alice, "subagents spawn", agent="researcher", task="Two", thread=True)
    assert refused.startswith("⚠️ Over budget: your runs in the last hour"), refused
    [thread] = world.discord.threads()
    assert thread.archived
    assert world.rows("SELECT COUNT(*) FROM thread_bindings") == [(0,)]
    assert world.rows("SELECT COUNT(*) FROM runs") == [(1,)]


async def test_a_cost_cap_too_small_to_keep_is_refused_not_turned_into_no_cap(world):
    world.extra_config = "[budgets]\nmember_cost_per_day_usd = 5\n"
    await world.start_bot()
    admin = member(world, "admin", manage_guild=True)

    refused = await command(world, admin, "settings budgets", member_cost_per_day_usd=0.0000004)
    assert refused == "⚠️ member_cost_per_day_usd must be 0 (no cap) or at least $0.000001; 4e-07 would round to no cap."
    assert world.rows("SELECT COUNT(*) FROM guild_budgets") == [(0,)]
    shown = await command(world, admin, "settings budgets")
    assert "member_cost_per_day_usd: $5.00 ([budgets])" in shown.splitlines()
