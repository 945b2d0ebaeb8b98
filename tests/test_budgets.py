"""Budgets through the real orchestrator and SQLite: runs refused over a cap with the numbers, a run stopped at the
model request after it reached one (keeping its partial output), the ledger surviving a restart, the once-a-day
warning, per-server values and ZeroClaw's cost budget."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.usage import RequestUsage

from bot.core.budgets.meter import OverBudget
from bot.core.runs.requests import ChatRequest, SpawnRequest
from bot.records import RunStatus
from tests import stores
from tests.core_support import ORIGIN, Gate, Script, ScriptedModels, running_core, settle, text
from tests.db_views import (
    audit_entries,
    outbox_payloads,
    run_count,
    run_statuses,
    runs_per_user,
    session_count,
    usage_days,
    usage_spent,
)

BASE = """
[agents.defaults]
model = "test/default"
[agents.defaults.subagents]
announce = "direct"
max_concurrent = 4
max_spawn_depth = 2
[agents.list.main]
[agents.list.researcher]
"""
OTHER = ORIGIN.__class__(user_id=8, channel_id=100, conversation="discord:channel:100", guild_id=1, message_id=56)


def spawn(origin=ORIGIN, task="find it"):
    return SpawnRequest(agent_id="researcher", task=task, origin=origin)


class Spender:
    """A model that says something, then calls ``sessions_list`` again and again; each response uses 150 tokens
    and costs ``cost`` (unpriced when ``None``)."""

    def __init__(self, cost: Decimal | None = None) -> None:
        self.calls = 0
        self.cost = cost

    def __call__(self, messages, info):
        self.calls += 1
        usage = RequestUsage(input_tokens=100, output_tokens=50, cost=self.cost)
        parts = [TextPart(f"partial {self.calls}"), ToolCallPart("sessions_list", {})]
        return ModelResponse(parts=parts, usage=usage)


async def finished(core, run_id):
    async def ended():
        return (await core.runs.get(run_id)).status.is_terminal

    await settle(core, ended)
    return await core.runs.get(run_id)


async def table_counts(core) -> tuple[int, int]:
    return await session_count(core), await run_count(core)


async def test_a_members_runs_per_hour_cap_refuses_with_its_numbers_and_survives_a_restart(tmp_path):
    config = BASE + "[budgets]\nmember_runs_per_hour = 2\n"
    async with running_core(tmp_path, ScriptedModels(default=text("ok")), config) as core:
        for _ in range(2):
            await finished(core, (await core.spawn(spawn())).run_id)
        before = await table_counts(core)
        with pytest.raises(OverBudget) as refused:
            await core.spawn(spawn())
        assert await table_counts(core) == before  # nothing written for the refused spawn
        other = await core.spawn(spawn(origin=OTHER))  # another member's budget is their own
        assert (await finished(core, other.run_id)).status is RunStatus.COMPLETED
    assert re.fullmatch(
        r"Over budget: your runs in the last hour on this server: 2 of 2 runs \(member_runs_per_hour\)\. "
        r"One frees up at \d\d:\d\d UTC, in 59m\d+s\.",
        str(refused.value),
    ), str(refused.value)
    async with running_core(tmp_path, ScriptedModels(default=text("ok")), config) as core:
        with pytest.raises(OverBudget, match="2 of 2 runs"):
            await core.chat(ChatRequest(text="hello", origin=ORIGIN))


async def test_a_run_that_reaches_the_token_cap_stops_at_its_next_request_and_keeps_its_partial_output(tmp_path):
    config = BASE + "[budgets]\nmember_tokens_per_day = 250\n"
    spender = Spender()
    async with running_core(tmp_path, ScriptedModels(default=spender), config) as core:
        accepted = await core.spawn(spawn())
        run = await finished(core, accepted.run_id)
        assert spender.calls == 2  # 150 tokens, then 300: the third request is never made
        assert (run.status, run.error) == (RunStatus.FAILED, "budget exhausted (member_tokens_per_day)")
        assert run.result_text == "partial 2"
        assert (run.usage.input_tokens, run.usage.output_tokens) == (200, 100)
        [announcement] = [p for p in await outbox_payloads(core) if p["run_id"] == run.id and p["kind"] != "reply"]
        assert announcement["status_line"] == "failed: budget exhausted (member_tokens_per_day)"
        assert (announcement["body"], announcement["mention_user_id"]) == ("partial 2", 7)
        with pytest.raises(OverBudget) as refused:
            await core.spawn(spawn())
        assert str(refused.value).startswith(
            "Over budget: your tokens today on this server: 300 of 250 tokens (member_tokens_per_day). "
            "It resets at 00:00 UTC, in "
        )
        other = await core.spawn(spawn(origin=OTHER))
        assert (await finished(core, other.run_id)).error == "budget exhausted (member_tokens_per_day)"
        assert spender.calls == 4  # the other member spent their own 300


async def test_a_member_is_warned_once_a_day_at_80_percent_of_a_daily_cap(tmp_path):
    config = BASE + "[budgets]\nmember_tokens_per_day = 1000\n"
    calls = []

    def spend_200(messages, info):
        calls.append(1)
        return ModelResponse(parts=[TextPart("ok")], usage=RequestUsage(input_tokens=150, output_tokens=50))

    async with running_core(tmp_path, ScriptedModels(default=spend_200), config) as core:
        for count in range(1, 6):
            await finished(core, (await core.spawn(spawn())).run_id)
            warnings = [p for p in await outbox_payloads(core) if p["status_line"] == "budget warning"]
            assert len(warnings) == (1 if count >= 4 else 0), count  # 800 of 1000 is the fourth run's
    [warning] = warnings
    assert warning["mention_user_id"] == 7 and warning["kind"] == "reply"
    assert warning["body"].startswith(
        "<@7> ⚠️ You have used 80% of your tokens today on this server: 800 of 1,000 tokens "
        "(member_tokens_per_day). It resets at 00:00 UTC, in "
    )
    warnings = "SELECT channel_id FROM outbox WHERE idempotency_key LIKE 'budget-warning:%'"
    assert stores.query(tmp_path / "core.sqlite3", warnings) == [(100,)]


async def test_a_members_concurrent_runs_cap_counts_their_own_runs_not_their_agents_children(tmp_path):
    config = BASE + "[budgets]\nmember_concurrent_runs = 1\n"
    gate = Gate()
    async with running_core(tmp_path, ScriptedModels(default=gate), config) as core:
        first = await core.spawn(spawn())
        await gate.entered.wait()
        with pytest.raises(OverBudget) as refused:
            await core.chat(ChatRequest(text="hello", origin=ORIGIN))
        assert str(refused.value) == (
            "Over budget: your runs in progress on this server: 1 of 1 run (member_concurrent_runs). "
            "One frees up when one of them ends."
        )
        gate.opened.set()
        assert (await finished(core, first.run_id)).status is RunStatus.COMPLETED
        chat = await core.chat(ChatRequest(text="hello", origin=ORIGIN))
        assert (await finished(core, chat)).status is RunStatus.COMPLETED


async def test_a_servers_own_values_replace_the_configs_and_are_audited(tmp_path):
    config = BASE + "[budgets]\nserver_runs_per_hour = 5\n"
    async with running_core(tmp_path, ScriptedModels(default=text("ok")), config) as core:
        limits = core.core.budget_limits
        await limits.update(1, {"server_runs_per_hour": Decimal(1)}, actor_user_id=99)
        effective = await limits.effective(1)
        assert (effective.values["server_runs_per_hour"], effective.sources["server_runs_per_hour"]) == (
            1,
            "this server",
        )
        assert effective.sources["member_runs_per_hour"] == "default"
        assert (await limits.effective(2)).sources["server_runs_per_hour"] == "[budgets]"
        await finished(core, (await core.spawn(spawn())).run_id)
        with pytest.raises(OverBudget, match=r"this server's runs in the last hour: 1 of 1 run"):
            await core.spawn(spawn(origin=OTHER))
        await limits.update(1, {}, clear="server_runs_per_hour", actor_user_id=99)
        assert (await limits.effective(1)).values["server_runs_per_hour"] == 5
        await finished(core, (await core.spawn(spawn(origin=OTHER))).run_id)
        audit = await audit_entries(core)
    assert [(row.actor_user_id, row.action, row.detail) for row in audit] == [
        (99, "budgets", "server_runs_per_hour=1"),
        (99, "budgets", "server_runs_per_hour=inherit"),
    ]


async def test_an_agents_own_daily_token_cap_counts_every_member(tmp_path):
    config = BASE.replace("[agents.list.researcher]\n", "[agents.list.researcher]\ntokens_per_day = 300\n")
    spender = Spender()
    async with running_core(tmp_path, ScriptedModels(default=spender, quiet=text("ok")), config) as core:
        run = await finished(core, (await core.spawn(spawn())).run_id)
        assert run.error == "budget exhausted (agents.list.researcher.tokens_per_day)"
        with pytest.raises(OverBudget, match=r"agent researcher's tokens today: 300 of 300 tokens"):
            await core.spawn(spawn(origin=OTHER))
        main = await core.spawn(SpawnRequest(agent_id="main", task="hi", origin=OTHER, model="test/quiet"))
        assert (await finished(core, main.run_id)).status is RunStatus.COMPLETED  # other agents are not capped


async def test_zeroclaws_max_cost_per_day_cents_stops_the_agent_in_zeroclaws_words(tmp_path):
    config = BASE.replace("[agents.list.researcher]\n", '[agents.list.researcher]\nruntime_profile = "tight"\n')
    config += "[runtime_profiles.tight]\nmax_cost_per_day_cents = 1\n"
    spender = Spender(cost=Decimal("0.006"))
    async with running_core(tmp_path, ScriptedModels(default=spender), config) as core:
        run = await finished(core, (await core.spawn(spawn())).run_id)
        zeroclaw = "Budget exceeded: $0.0120 of $0.01 Day limit. Cannot make further API calls until the budget resets."
        assert (spender.calls, run.status, run.error) == (2, RunStatus.FAILED, zeroclaw)
        with pytest.raises(OverBudget) as refused:
            await core.spawn(spawn(origin=OTHER))
        assert str(refused.value) == zeroclaw
        assert await usage_spent(core) == (12_000_000, 0)


async def test_unpriced_responses_are_counted_as_unpriced_not_as_free(tmp_path):
    spender = Spender()
    config = BASE + "[budgets]\nmember_tokens_per_day = 250\n"
    async with running_core(tmp_path, ScriptedModels(default=spender), config) as core:
        await finished(core, (await core.spawn(spawn())).run_id)
        row = (await usage_days(core, guild_id=1, user_id=7, agent_id="researcher"))[0]
    assert tuple(row) == (1, 2, 200, 100, 0, 2)


async def test_a_chat_turn_stopped_by_a_cap_answers_with_what_it_had_so_far(tmp_path):
    config = BASE + "[budgets]\nmember_tokens_per_day = 250\n"
    async with running_core(tmp_path, ScriptedModels(default=Spender()), config) as core:
        run = await finished(core, await core.chat(ChatRequest(text="look around", origin=ORIGIN)))
        payloads = [p for p in await outbox_payloads(core) if p["run_id"] == run.id]
    [reply] = [p for p in payloads if p["status_line"] != "budget warning"]
    assert reply["kind"] == "reply" and len(payloads) == 2  # and the member's 80% warning
    assert reply["body"] == (
        "I couldn't answer: failed: budget exhausted (member_tokens_per_day). What I had so far:\n\npartial 2"
    )


async def test_an_agents_launches_are_refused_in_the_same_words_and_its_turn_goes_on(tmp_path):
    config = BASE + "[budgets]\nmember_runs_per_hour = 1\n"
    script = Script(("sessions_spawn", {"task": "dig"}), ("spawn_subagent", {"prompt": "dig"}))
    async with running_core(tmp_path, ScriptedModels(default=script), config) as core:
        run = await finished(core, await core.chat(ChatRequest(text="go", origin=ORIGIN)))
        runs = await run_count(core)
    assert run.status is RunStatus.COMPLETED and runs == 1  # the chat turn itself was the hour's one run
    refusal = "Over budget: your runs in the last hour on this server: 1 of 1 run (member_runs_per_hour)."
    spawned, subagent = script.results
    assert (spawned["status"], spawned["error"].startswith(refusal)) == ("forbidden", True)
    assert subagent.startswith(refusal)  # spawn_subagent's refusals, as ZeroClaw's, are its error's bare words


async def test_a_follow_up_an_agent_sends_is_the_session_owners_and_another_members_turn_is_refused(tmp_path):
    """Members share a channel's main session, but an agent's tools act for the member whose turn it is: the child
    alice's turn spawned is not messaged (sessions_send) in bob's turn, which is charged nothing for it; in
    alice's turn the follow-up runs, hers and on her budget."""
    config = """
[agents.defaults]
model = "test/main"
[agents.defaults.subagents]
announce = "direct"
max_spawn_depth = 2
allow_agents = ["*"]
[agents.list.main]
[agents.list.worker]
model = "test/worker"
"""
    main = Script(("sessions_spawn", {"task": "remember 42", "agentId": "worker"}))
    async with running_core(tmp_path, ScriptedModels(main=main, worker=text("ok")), config) as core:
        await finished(core, await core.chat(ChatRequest(text="go", origin=ORIGIN)))
        await settle(core, lambda: _settled_children(core))
        child = main.results[0]["childSessionKey"]
        main.calls.append(("sessions_send", {"sessionKey": child, "message": "again"}))
        await finished(core, await core.chat(ChatRequest(text="send it", origin=OTHER)))
        assert main.results[1]["status"] == "forbidden"
        assert main.results[1]["error"].endswith(f"belongs to <@{ORIGIN.user_id}>. Ask them or a moderator.")
        main.calls.append(("sessions_send", {"sessionKey": child, "message": "again"}))
        await finished(core, await core.chat(ChatRequest(text="send it", origin=ORIGIN)))
        sent = main.results[2]
        assert sent["delivered"] == "started a follow-up run"
        follow_up = await finished(core, sent["runId"])
        assert follow_up.requester_user_id == ORIGIN.user_id
        runs = await runs_per_user(core)
    assert sorted(runs) == sorted([(ORIGIN.user_id, 4), (OTHER.user_id, 1)])


async def _settled_children(core):
    statuses = await run_statuses(core, "spawn")
    return bool(statuses) and all(status == "completed" for status in statuses)
