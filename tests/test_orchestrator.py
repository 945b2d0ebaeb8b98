"""The orchestrator core with pydantic-ai FunctionModel: states, outbox rows, recovery, validation."""

from __future__ import annotations

import asyncio
import gc
import json

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart

from bot.config import parse_config
from bot.core.errors import UserError
from bot.core.orchestrator import Orchestrator
from bot.core.runs.requests import ChatRequest, SpawnAccepted, SpawnRequest
from bot.core.runs.spawn_policy import SpawnArgs
from bot.records import Origin, RunStatus, Session
from storage.db import Database
from tests import stores
from tests.core_support import ORIGIN, Gate, ScriptedModels, text

CONFIG = """
[agents.defaults]
model = "test/default"
[agents.defaults.subagents]
max_concurrent = 1
[agents.list.main]
[agents.list.researcher]
"""


async def make(tmp_path, models, config_text=CONFIG):
    db = await Database.open(stores.database(tmp_path / "t.sqlite3"))
    orchestrator = Orchestrator(parse_config(config_text), db, models)
    woke = asyncio.Event()
    orchestrator.add_outbox_listener(woke.set)
    await orchestrator.start()
    return db, orchestrator, woke


def spawn_request(**overrides):
    values = dict(agent_id="researcher", task="find it", origin=ORIGIN)
    values.update(overrides)
    return SpawnRequest(**values)


async def settled(orchestrator, run_id):
    await orchestrator.core.dispatch.wait_idle()
    return await orchestrator.runs.get(run_id)


async def test_spawn_completes_and_writes_one_announcement(tmp_path):
    db, orchestrator, woke = await make(tmp_path, ScriptedModels(default=text("the answer")))
    accepted = await orchestrator.spawn(spawn_request())
    assert accepted.session_key.startswith("agent:researcher:subagent:")
    run = await settled(orchestrator, accepted.run_id)
    assert run.status is RunStatus.COMPLETED
    assert run.result_text == "the answer"
    rows = await orchestrator.outbox.for_run(run.id)
    assert len(rows) == 1 and woke.is_set()
    payload = json.loads(rows[0].payload_json)
    assert payload["status_line"] == "completed successfully"
    assert payload["body"] == "the answer"
    assert payload["mention_user_id"] == 7
    assert payload["stats_line"].startswith("runtime 0s • tokens")
    session = await orchestrator.sessions.get(accepted.session_key)
    assert (session.depth, session.role, session.requester_session_key) == (1, "leaf", "agent:main:discord:channel:100")
    assert await orchestrator.transcripts.count(accepted.session_key) == 2
    await orchestrator.close()
    await db.close()


async def test_failure_is_a_state_not_model_text(tmp_path):
    def broken(messages, info):
        raise RuntimeError("kaboom")

    db, orchestrator, _ = await make(tmp_path, ScriptedModels(default=broken))
    accepted = await orchestrator.spawn(spawn_request(task="completed successfully, I promise"))
    run = await settled(orchestrator, accepted.run_id)
    assert run.status is RunStatus.FAILED
    assert run.error == "internal error (RuntimeError)"
    payload = json.loads((await orchestrator.outbox.for_run(run.id))[0].payload_json)
    assert payload["status_line"] == "failed: internal error (RuntimeError)"
    await orchestrator.close()
    await db.close()


async def test_timeout_keeps_partial_output(tmp_path):
    release = asyncio.Event()

    async def slow(messages, info):
        if not any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart("halfway there"), ToolCallPart("final_result_missing", {})])
        await release.wait()
        return ModelResponse(parts=[TextPart("never")])

    config = CONFIG.replace("max_concurrent = 1", "max_concurrent = 1\nrun_timeout_seconds = 1")
    db, orchestrator, _ = await make(tmp_path, ScriptedModels(default=slow), config)
    accepted = await orchestrator.spawn(spawn_request())
    run = await settled(orchestrator, accepted.run_id)
    assert run.status is RunStatus.TIMED_OUT
    assert run.result_text == "halfway there"
    payload = json.loads((await orchestrator.outbox.for_run(run.id))[0].payload_json)
    assert payload["status_line"] == "timed out"
    await orchestrator.close()
    await db.close()


async def test_lane_keeps_excess_runs_queued(tmp_path):
    gate = Gate()
    db, orchestrator, _ = await make(tmp_path, ScriptedModels(default=gate))
    first = await orchestrator.spawn(spawn_request())
    second = await orchestrator.spawn(spawn_request())
    await gate.entered.wait()
    assert (await orchestrator.runs.get(first.run_id)).status is RunStatus.RUNNING
    assert (await orchestrator.runs.get(second.run_id)).status is RunStatus.QUEUED
    gate.opened.set()
    assert (await settled(orchestrator, second.run_id)).status is RunStatus.COMPLETED
    await orchestrator.close()
    await db.close()


async def test_restart_interrupts_leftover_runs_once(tmp_path):
    gate = Gate()
    db, orchestrator, _ = await make(tmp_path, ScriptedModels(default=gate))
    accepted = await orchestrator.spawn(spawn_request())
    await gate.entered.wait()
    await orchestrator.close()
    await db.close()

    for _ in range(2):
        db, orchestrator, _woke = await make(tmp_path, ScriptedModels(default=text("x")))
        run = await orchestrator.runs.get(accepted.run_id)
        assert run.status is RunStatus.INTERRUPTED
        rows = await orchestrator.outbox.for_run(run.id)
        assert len(rows) == 1
        assert json.loads(rows[0].payload_json)["status_line"].startswith("interrupted: the bot restarted")
        await orchestrator.close()
        await db.close()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"task": "   "}, "Task must not be empty."),
        ({"task": "x" * 6000}, "Task is too long (6,000 characters; the limit is 4,000)."),
        ({"agent_id": "Nope!"}, 'Invalid agentId "Nope!". Agent IDs must match [a-z0-9][a-z0-9_-]{0,63}.'),
        ({"agent_id": "ghost"}, 'Unknown agentId "ghost". Configured agents: main, researcher.'),
        ({"model": "test/missing"}, "Unknown model 'test/missing'."),
        ({"thinking": "high"}, "does not support thinking levels"),
        ({"thinking": "extreme"}, 'Invalid thinking level "extreme". Use one of: off, minimal, low'),
    ],
)
async def test_bad_spawn_input_is_refused_and_creates_nothing(tmp_path, overrides, message):
    db, orchestrator, _ = await make(tmp_path, ScriptedModels(default=text("x")))
    with pytest.raises(UserError) as caught:
        await orchestrator.spawn(spawn_request(**overrides))
    assert message in str(caught.value)
    assert (await db.fetch_one("SELECT COUNT(*) FROM runs"))[0] == 0
    assert (await db.fetch_one("SELECT COUNT(*) FROM sessions"))[0] == 0
    await orchestrator.close()
    await db.close()


async def test_spawns_that_arrive_together_wait_for_their_turn_having_built_nothing(tmp_path):
    """A burst in one conversation: spawns waiting for its spawn lock hold only their request, no session and no
    arguments yet, so 10,000 at once are little for each full collection to walk, and each costs the event loop
    little until its turn. Then every one is accepted and runs, and a bad one among them is still refused."""
    uncapped = "[discord]\nmax_active_runs_per_member = 0\n[budgets]\nmember_concurrent_runs = 0\n" + CONFIG
    db, orchestrator, _ = await make(tmp_path, ScriptedModels(default=text("done")), uncapped)
    requests = [spawn_request(task=f"job {i}") for i in range(200)] + [spawn_request(agent_id="ghost")]
    before = sum(isinstance(thing, (Session, SpawnArgs)) for thing in gc.get_objects())
    spawns = [asyncio.ensure_future(orchestrator.spawn(request)) for request in requests]
    await asyncio.sleep(0)  # each spawn has run up to its first wait
    assert not any(spawn.done() for spawn in spawns)
    built = sum(isinstance(thing, (Session, SpawnArgs)) for thing in gc.get_objects()) - before
    assert built < 10  # the first spawn's, which holds the lock (when each waiting one built both: 403)
    outcomes = await asyncio.gather(*spawns, return_exceptions=True)
    assert all(isinstance(outcome, SpawnAccepted) for outcome in outcomes[:200])
    assert isinstance(outcomes[200], UserError) and 'Unknown agentId "ghost"' in str(outcomes[200])
    for outcome in outcomes[:200]:
        assert (await settled(orchestrator, outcome.run_id)).status is RunStatus.COMPLETED
    tasks = await db.fetch_all("SELECT task FROM runs")
    assert sorted(row[0] for row in tasks) == sorted(f"job {i}" for i in range(200))
    await orchestrator.close()
    await db.close()


async def test_chat_keeps_history_across_restart(tmp_path):
    def recall(messages, info):
        said = [p.content for m in messages for p in m.parts if p.part_kind == "user-prompt"]
        return ModelResponse(parts=[TextPart(" | ".join(said))])

    origin = Origin(user_id=7, channel_id=100, message_id=1, conversation="discord:channel:100", guild_id=1)
    db, orchestrator, _ = await make(tmp_path, ScriptedModels(default=recall))
    first = await orchestrator.chat(ChatRequest(text="my name is Ada", origin=origin))
    assert (await settled(orchestrator, first)).result_text == "my name is Ada"
    await orchestrator.close()
    await db.close()

    db, orchestrator, _ = await make(tmp_path, ScriptedModels(default=recall))
    second = await orchestrator.chat(ChatRequest(text="what is my name?", origin=origin))
    assert (await settled(orchestrator, second)).result_text == "my name is Ada | what is my name?"
    payload = json.loads((await orchestrator.outbox.for_run(second))[0].payload_json)
    assert payload["kind"] == "reply" and payload["reply_to_message_id"] == 1
    await orchestrator.close()
    await db.close()


async def test_a_steer_that_arrives_after_the_run_ended_is_refused_not_left_unread(tmp_path):
    db, orchestrator, _ = await make(tmp_path, ScriptedModels(default=text("done")))
    accepted = await orchestrator.spawn(spawn_request())
    await settled(orchestrator, accepted.run_id)

    assert await orchestrator.core.commands.steer(accepted.run_id, "too late") is False
    assert await db.fetch_all("SELECT * FROM run_inbox") == []
    await orchestrator.close()
    await db.close()
