"""Durable runs in the core: a run stopped mid-way (its process stopped while a model request was in flight) resumes
at the next start from its journal, storing each message and counting each request once."""

from __future__ import annotations

import asyncio

import pytest
from dbos import DBOS
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from bot.config import StorageConfig, parse_config
from bot.core.durable_runs import DurableRuns
from bot.core.orchestrator import Orchestrator
from bot.core.requests import SpawnRequest
from bot.records import LIVE_STATUSES, RunStatus
from storage.db import Database
from tests.core_support import ORIGIN, ScriptedModels, first_prompt

CHILD_TASK = "child task"
CONFIG = """
[agents.defaults]
model = "test/default"
[agents.defaults.subagents]
max_spawn_depth = 2
[agents.list.main]
[agents.list.researcher]
"""


@pytest.fixture(autouse=True)
def _no_dbos_left_behind():
    """DBOS is one instance per process: a test that fails before closing its orchestrator must not hand its
    instance (and its journal file) to the next test."""
    yield
    DBOS.destroy()


class Script:
    """Request 1 asks for ``tool``; request 2 waits for ``release`` (or for ever), then answers. A child's requests
    (its task is ``child task``) are answered at once."""

    def __init__(self, tool: str = "sessions_list", args: dict[str, str] | None = None) -> None:
        self.tool, self.args = tool, args or {}
        self.requests: list[list[ModelMessage]] = []
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()

    async def answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if first_prompt(messages) == CHILD_TASK:
            return ModelResponse(parts=[TextPart("child done")])
        self.requests.append(messages)
        if len(self.requests) == 1:
            return ModelResponse(parts=[ToolCallPart(self.tool, self.args)])
        self.waiting.set()
        await self.release.wait()
        return ModelResponse(parts=[TextPart("resumed answer")])


async def start(tmp_path, script: Script, *, durable: bool) -> tuple[Database, Orchestrator]:
    config = parse_config(CONFIG)
    db = await Database.open(str(tmp_path / "t.sqlite3"))
    runs = DurableRuns(config.durability, StorageConfig(path=str(tmp_path / "t.sqlite3"))) if durable else None
    orchestrator = Orchestrator(config, db, ScriptedModels(default=script.answer), durable=runs)
    await orchestrator.start()
    return db, orchestrator


async def stop(db: Database, orchestrator: Orchestrator) -> None:
    await orchestrator.close()
    await db.close()


async def test_a_run_stopped_mid_request_resumes_from_its_journal_at_the_next_start(tmp_path):
    before = Script()
    db, orchestrator = await start(tmp_path, before, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await before.waiting.wait()
    await stop(db, orchestrator)

    after = Script()
    after.requests.append([])  # its first request is the journal's
    after.release.set()
    db, orchestrator = await start(tmp_path, after, durable=True)
    await orchestrator.wait_for(lambda: orchestrator_run_ended(orchestrator, accepted.run_id), 10)
    run = await orchestrator.runs.get(accepted.run_id)

    assert (run.status, run.result_text) == (RunStatus.COMPLETED, "resumed answer")
    assert len(after.requests) == 2 and after.requests[1][-1].parts[0].part_kind == "tool-return"
    assert [message.kind for message in await orchestrator.transcripts.for_run(run.id)] == [
        "request",
        "response",
        "request",
        "response",
    ]
    assert (run.usage.requests, run.usage.tool_calls) == (2, 1)
    assert len(await orchestrator.outbox.for_run(run.id)) == 1
    await stop(db, orchestrator)


async def test_without_durable_runs_a_stopped_run_is_interrupted(tmp_path):
    db, orchestrator = await start(tmp_path, before := Script(), durable=False)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await before.waiting.wait()
    await stop(db, orchestrator)

    db, orchestrator = await start(tmp_path, Script(), durable=True)
    run = await orchestrator.runs.get(accepted.run_id)
    assert run.status is RunStatus.INTERRUPTED
    assert len(await orchestrator.outbox.for_run(run.id)) == 1
    await stop(db, orchestrator)


async def test_a_resumed_run_gets_back_the_child_it_spawned_before_the_stop_and_spawns_no_other(tmp_path):
    before = Script("sessions_spawn", {"task": CHILD_TASK})
    db, orchestrator = await start(tmp_path, before, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await before.waiting.wait()
    await stop(db, orchestrator)

    after = Script("sessions_spawn", {"task": CHILD_TASK})
    after.requests.append([])  # its first request is the journal's
    after.release.set()
    db, orchestrator = await start(tmp_path, after, durable=True)
    await orchestrator.wait_for(lambda: orchestrator_run_ended(orchestrator, accepted.run_id), 10)

    children = [run for run in await orchestrator.runs.list_live() if run.parent_run_id == accepted.run_id]
    spawned = await db.fetch_all("SELECT id FROM runs WHERE parent_run_id = ?", (accepted.run_id,))
    assert children == [] and len(spawned) == 1
    assert (await orchestrator.runs.get(accepted.run_id)).status is RunStatus.COMPLETED
    await stop(db, orchestrator)


async def orchestrator_run_ended(orchestrator: Orchestrator, run_id: str) -> bool | None:
    run = await orchestrator.runs.get(run_id)
    return True if run is not None and run.status not in LIVE_STATUSES else None
