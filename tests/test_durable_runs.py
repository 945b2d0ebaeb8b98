"""Durable runs in the core: a run stopped mid-way (its process stopped while a model request was in flight) resumes
at the next start from its journal, storing each message and counting each request once."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import pytest
from dbos import DBOS, _dbos
from dbos._error import DBOSAwaitedWorkflowCancelledError  # not re-exported by dbos
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo
from structlog.testing import capture_logs

from bot.config import StorageConfig, parse_config
from bot.core.durable import durable_runs as durable_runs_module
from bot.core.durable.dispatch import RunDispatch
from bot.core.durable.durable_runs import DurableRuns
from bot.core.durable.lane_places import LanePlaces
from bot.core.durable.queue_wakes import QueueWakes
from bot.core.orchestrator import Orchestrator
from bot.core.runs.requests import ChatRequest, SpawnRequest
from bot.logging_setup import route_dbos_logs
from bot.records import LIVE_STATUSES, Run, RunStatus
from storage.db import Database
from tests.core_support import ORIGIN, ScriptedModels, first_prompt
from tests.polling import eventually, stays

CHILD_TASK = "child task"
SLOW_CHILD_TASK = "slow child task"  # answered once the script's release is set
QUICK_RECOVERY = "queue_poll_seconds = 0.2\n"  # a run recovered at a start waits for a poll of DBOS's own queue
CONFIG = (
    "[durability]\n"
    + QUICK_RECOVERY
    + """
[agents.defaults]
model = "test/default"
[agents.defaults.subagents]
max_spawn_depth = 2
[risk_profiles.team]
delegation_policy = { mode = "allow" }
[agents.list.main]
[agents.list.researcher]
risk_profile = "team"
[agents.list.writer]
risk_profile = "team"
"""
)
DEFAULT_POLLS = CONFIG.replace(QUICK_RECOVERY, "")  # for what a second between a queue's polls leaves time to see


@pytest.fixture(autouse=True)
def _no_dbos_left_behind():
    """DBOS is one instance per process: a test that fails before closing its orchestrator must not hand its
    instance (and its journal file) to the next test."""
    yield
    DBOS.destroy()


Args = dict[str, str] | Callable[[list[ModelMessage]], dict[str, str]]  # or made from the messages so far


class Script:
    """Request i asks for the i-th of ``calls``; the one after the last waits for ``release`` (or for ever), then
    answers. A child's requests (its task is ``child task``) are answered at once."""

    def __init__(self, *calls: tuple[str, Args]) -> None:
        self.calls = calls or (("sessions_list", {}),)
        self.requests: list[list[ModelMessage]] = []
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()

    async def answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if first_prompt(messages) in (CHILD_TASK, SLOW_CHILD_TASK):
            if first_prompt(messages) == SLOW_CHILD_TASK:
                await self.release.wait()
            return ModelResponse(parts=[TextPart("child done")])
        self.requests.append(messages)
        if len(self.requests) <= len(self.calls):
            tool, args = self.calls[len(self.requests) - 1]
            return ModelResponse(parts=[ToolCallPart(tool, args(messages) if callable(args) else args)])
        self.waiting.set()
        await self.release.wait()
        return ModelResponse(parts=[TextPart("resumed answer")])


def durable_runs(tmp_path) -> DurableRuns:
    return DurableRuns(parse_config(CONFIG).durability, StorageConfig(path=str(tmp_path / "t.sqlite3")))


async def start(
    tmp_path,
    script: Script,
    *,
    durable: bool,
    clock: Callable[[], float] = time.time,
    runs: DurableRuns | None = None,
    config_text: str = CONFIG,
) -> tuple[Database, Orchestrator]:
    config = parse_config(config_text)
    db = await Database.open(str(tmp_path / "t.sqlite3"))
    runs = runs or (durable_runs(tmp_path) if durable else None)
    orchestrator = Orchestrator(config, db, ScriptedModels(default=script.answer), clock=clock, durable=runs)
    await orchestrator.start()
    return db, orchestrator


async def stop(db: Database, orchestrator: Orchestrator) -> None:
    await orchestrator.close()
    await db.close()


async def replayed(tmp_path, after: Script, run_id: str) -> tuple[Database, Orchestrator]:
    """Start again with ``after`` (its first request is the journal's) until the run left behind has ended."""
    after.requests.append([])
    db, orchestrator = await start(tmp_path, after, durable=True)
    await orchestrator.core.ctx.signals.wait_for(lambda: orchestrator_run_ended(orchestrator, run_id), 10)
    return db, orchestrator


async def completed_at_next_start(tmp_path, run_id: str) -> tuple[Database, Orchestrator, Run, Script]:
    """Start again with a script that lists sessions, then answers: the run left behind completes; the started core,
    the run, and the script (for its requests)."""
    after = Script(("sessions_list", {}))
    after.release.set()
    db, orchestrator = await start(tmp_path, after, durable=True)
    await orchestrator.core.ctx.signals.wait_for(lambda: orchestrator_run_ended(orchestrator, run_id), 10)
    run = await orchestrator.runs.get(run_id)
    assert run is not None
    return db, orchestrator, run, after


async def test_a_run_stopped_mid_request_resumes_from_its_journal_at_the_next_start(tmp_path):
    before = Script()
    db, orchestrator = await start(tmp_path, before, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await before.waiting.wait()
    await stop(db, orchestrator)

    after = Script()
    after.release.set()
    db, orchestrator = await replayed(tmp_path, after, accepted.run_id)
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


LAUNCHES = {
    "sessions_spawn": {"task": CHILD_TASK},
    "spawn_subagent": {"prompt": CHILD_TASK},
    "delegate": {"agent": "writer", "prompt": CHILD_TASK},
}


@pytest.mark.parametrize("tool", LAUNCHES)
async def test_a_resumed_run_gets_back_the_child_it_spawned_before_the_stop_and_spawns_no_other(tmp_path, tool):
    before = Script((tool, LAUNCHES[tool]))
    db, orchestrator = await start(tmp_path, before, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await before.waiting.wait()
    await stop(db, orchestrator)

    after = Script((tool, LAUNCHES[tool]))
    after.requests.append([])  # its first request is the journal's
    after.release.set()
    db, orchestrator = await start(tmp_path, after, durable=True)
    await orchestrator.core.ctx.signals.wait_for(lambda: orchestrator_run_ended(orchestrator, accepted.run_id), 10)

    children = [run for run in await orchestrator.runs.list_live() if run.parent_run_id == accepted.run_id]
    spawned = await db.fetch_all("SELECT id FROM runs WHERE parent_run_id = ?", (accepted.run_id,))
    assert children == [] and len(spawned) == 1
    assert (await orchestrator.runs.get(accepted.run_id)).status is RunStatus.COMPLETED
    assert after.requests[1][-1].parts[0].content == before.requests[1][-1].parts[0].content  # the same answer
    await stop(db, orchestrator)


async def orchestrator_run_ended(orchestrator: Orchestrator, run_id: str) -> bool | None:
    run = await orchestrator.runs.get(run_id)
    return True if run is not None and run.status not in LIVE_STATUSES else None


class SteeredScript(Script):
    """Request 1 waits for ``release`` and asks for ``sessions_list``; request 2 waits for ``second`` (or for ever)."""

    def __init__(self) -> None:
        super().__init__()
        self.second = asyncio.Event()

    async def answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(messages)
        self.waiting.set()
        await (self.release if len(self.requests) == 1 else self.second).wait()
        return ModelResponse(parts=[ToolCallPart("sessions_list", {})] if len(self.requests) == 1 else [TextPart("ok")])


def prompts(messages: list[ModelMessage]) -> list[str]:
    return [part.content for m in messages for part in m.parts if part.part_kind == "user-prompt"]


def journaled(tmp_path, workflow_id: str) -> list[str]:
    """The steps DBOS recorded for a workflow, in order."""
    journal = sqlite3.connect(tmp_path / "t.sqlite3.dbos")
    try:
        sql = "SELECT function_name FROM operation_outputs WHERE workflow_uuid = ? ORDER BY function_id"
        return [row[0] for row in journal.execute(sql, (workflow_id,))]
    finally:
        journal.close()


async def test_a_steer_taken_before_the_stop_reaches_the_model_again_on_recovery_from_the_stores_record(tmp_path):
    """Inbox takes are journaled in the store, in the transaction that takes, not as DBOS steps."""
    before = SteeredScript()
    db, orchestrator = await start(tmp_path, before, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await before.waiting.wait()
    assert await orchestrator.core.commands.steer(accepted.run_id, "mind the costs")
    before.waiting.clear()
    before.release.set()
    await before.waiting.wait()
    assert prompts(before.requests[1])[-1] == "mind the costs"
    takes = await db.fetch_all(
        "SELECT step_key, output FROM run_steps WHERE step_key LIKE ?", (f"{accepted.run_id}#inbox.take#%",)
    )
    await stop(db, orchestrator)
    assert len(takes) > 1 and [row[1] for row in takes if row[1] != "[]"] == ['[[null, "mind the costs"]]']
    steps = journaled(tmp_path, accepted.run_id)
    assert "model.request" in steps and not {"run.start", "turn.start", "inbox.take"} & set(steps)

    after = SteeredScript()
    after.second.set()
    db, orchestrator = await replayed(tmp_path, after, accepted.run_id)

    assert prompts(after.requests[1]) == ["find it", "mind the costs"]
    assert len(after.requests) == 2
    assert (await orchestrator.runs.get(accepted.run_id)).status is RunStatus.COMPLETED
    await stop(db, orchestrator)


async def test_a_take_that_found_nothing_finds_nothing_on_replay_and_a_later_steer_reaches_the_model_once(tmp_path):
    """The steer came after the take before the request in flight: the replayed take is empty as it was (a request
    it preceded may have been recorded without the steer), and the steer reaches the model in the next request."""
    before = SteeredScript()
    db, orchestrator = await start(tmp_path, before, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await before.waiting.wait()
    before.waiting.clear()
    before.release.set()
    await before.waiting.wait()  # request 2 in flight: its take found nothing
    assert await orchestrator.core.commands.steer(accepted.run_id, "mind the costs")
    assert prompts(before.requests[1]) == ["find it"]
    await stop(db, orchestrator)

    after = SteeredScript()
    after.second.set()
    db, orchestrator = await replayed(tmp_path, after, accepted.run_id)

    assert prompts(after.requests[1]) == ["find it"]
    assert [prompts(request).count("mind the costs") for request in after.requests[2:]] == [1]
    assert (await orchestrator.runs.get(accepted.run_id)).status is RunStatus.COMPLETED
    await stop(db, orchestrator)


def child_key(messages: list[ModelMessage]) -> dict[str, str]:
    """``sessions_send`` to the child that ``sessions_spawn`` answered with."""
    spawned = next(p.content for m in messages for p in m.parts if p.part_kind == "tool-return")
    return {"sessionKey": spawned["childSessionKey"], "message": "one more thing"}


async def test_a_resumed_run_does_not_steer_its_child_again(tmp_path):
    calls = (("sessions_spawn", {"task": SLOW_CHILD_TASK}), ("sessions_send", child_key))
    before = Script(*calls)
    db, orchestrator = await start(tmp_path, before, durable=True)
    run_id = await orchestrator.chat(ChatRequest(text="find it", origin=ORIGIN))
    await before.waiting.wait()
    sent = [p.content for p in before.requests[2][-1].parts if p.part_kind == "tool-return"]
    assert [answer["delivered"] for answer in sent] == ["steered into the running run"]
    await stop(db, orchestrator)

    after = Script(*calls)
    after.requests += [[], []]  # its first two requests are the journal's
    after.release.set()
    db, orchestrator = await start(tmp_path, after, durable=True)
    await orchestrator.core.ctx.signals.wait_for(lambda: orchestrator_run_ended(orchestrator, run_id), 10)

    sent = "SELECT i.content FROM run_inbox i JOIN runs r ON r.id = i.run_id WHERE r.parent_run_id = ?"
    assert [row[0] for row in await db.fetch_all(sent, (run_id,))] == ["one more thing"]
    assert len(after.requests) == 3 and (await orchestrator.runs.get(run_id)).status is RunStatus.COMPLETED
    await stop(db, orchestrator)


async def test_retention_deletes_the_journal_of_workflows_that_ended_and_keeps_a_live_runs(tmp_path):
    """Open-source DBOS keeps every workflow and its steps for ever: a retention pass deletes those that ended
    ``journal_days`` (7) ago; a live run's workflow stays, and the run still resumes from it."""
    script = Script()
    script.release.set()
    db, orchestrator = await start(tmp_path, script, durable=True)
    done = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await orchestrator.core.ctx.signals.wait_for(lambda: orchestrator_run_ended(orchestrator, done.run_id), 10)
    script.release.clear()
    script.waiting.clear()
    live = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find more", origin=ORIGIN))
    await script.waiting.wait()
    statuses = {w.workflow_id: w.status for w in await DBOS.list_workflows_async(load_input=False, load_output=False)}
    assert statuses == {done.run_id: "SUCCESS", live.run_id: "PENDING"}
    await stop(db, orchestrator)

    for days_later, deleted in ((6, None), (8, 1)):
        script.waiting.clear()
        with capture_logs() as logs:
            db, orchestrator = await start(
                tmp_path, script, durable=True, clock=lambda d=days_later: time.time() + d * 86_400
            )
            await eventually(
                lambda: any(log["event"] == "retention_pass" for log in logs), timeout=10, describe="a pass"
            )
        (report,) = [log for log in logs if log["event"] == "retention_pass"]
        assert report["deleted"].get("journal_workflows") == deleted
        await script.waiting.wait()  # the live run resumed from its journal, at its request in flight
        remaining = await DBOS.list_workflows_async(load_input=False, load_output=False)
        assert {w.workflow_id for w in remaining} == ({live.run_id} if deleted else {done.run_id, live.run_id})
        assert (await orchestrator.runs.get(live.run_id)).status is RunStatus.RUNNING
        await stop(db, orchestrator)


async def test_a_kill_cancels_the_runs_workflow_and_its_request_in_flight(tmp_path, caplog):
    route_dbos_logs()  # as the bot does: DBOS's records go through the bot's logging
    script = Script()
    db, orchestrator = await start(tmp_path, script, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find the secret plan", origin=ORIGIN))
    await script.waiting.wait()

    with capture_logs() as logs, caplog.at_level(logging.DEBUG, logger="dbos"):
        stopped = await orchestrator.core.commands.kill(accepted.run_id)
        await asyncio.wait_for(orchestrator.core.dispatch.wait_idle(), 10)
    [workflow] = await DBOS.list_workflows_async(workflow_ids=[accepted.run_id])
    run = await orchestrator.runs.get(accepted.run_id)

    assert [r.id for r in stopped] == [accepted.run_id] and run.status is RunStatus.KILLED
    # ended, not left pending: cancelled, or (the token stopped it here first) recorded before the cancellation came
    assert workflow.status in ("CANCELLED", "SUCCESS")
    assert len(script.requests) == 2 and not script.release.is_set()
    assert "run_killed" in [line["event"] for line in logs]
    dbos_records = [record for record in caplog.records if record.name == "dbos"]
    assert not [record for record in dbos_records if record.levelno >= logging.ERROR], dbos_records
    # DBOS's warning about the step it stopped carried the whole conversation
    assert not [record for record in dbos_records if "secret plan" in record.getMessage()]
    await stop(db, orchestrator)


async def test_a_close_goes_on_when_a_run_task_ends_in_an_error_as_it_is_stopped(tmp_path):
    """DBOS's execution of a killed run can end in an error as it is stopped: parked over the cancellation, it looks
    for the recorded outcome and finds the workflow cancelled. That error used to come out of the close before the
    rest was stopped (in the bot the Discord connection stayed open, and a wire test's event loop hung on it under
    load). The timing cannot be had on demand: a task that ends so when stopped stands in for that execution."""
    db, orchestrator = await start(tmp_path, Script(), durable=True)
    tracked = asyncio.Event()

    async def parked_execution() -> None:
        orchestrator.core.dispatch.track("run-parked")
        tracked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise DBOSAwaitedWorkflowCancelledError("run-parked") from None

    execution = asyncio.create_task(parked_execution())
    await tracked.wait()
    with capture_logs() as logs:
        await stop(db, orchestrator)
    assert execution.done() and isinstance(execution.exception(), DBOSAwaitedWorkflowCancelledError)
    assert [line["task"] for line in logs if line["event"] == "task_failed_while_stopping"] == [execution.get_name()]
    db, orchestrator = await start(tmp_path, Script(), durable=True)  # DBOS was closed too: it launches again
    await stop(db, orchestrator)


async def test_a_workflow_cancelled_from_elsewhere_aborts_the_request_in_flight_and_the_run_ends_killed(tmp_path):
    """What a kill in another process does here: it commits the kill and cancels the workflow through DBOS's
    system database; this process sees the cancellation at its next poll and aborts the model request."""
    script = Script()
    aborted = asyncio.Event()
    answer = script.answer

    async def watched(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        try:
            return await answer(messages, info)
        except asyncio.CancelledError:
            aborted.set()
            raise

    script.answer = watched  # type: ignore[method-assign]
    db, orchestrator = await start(tmp_path, script, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await script.waiting.wait()

    await DBOS.cancel_workflow_async(accepted.run_id)
    await asyncio.wait_for(aborted.wait(), 5)
    await orchestrator.core.ctx.signals.wait_for(lambda: orchestrator_run_ended(orchestrator, accepted.run_id), 5)
    await asyncio.wait_for(orchestrator.core.dispatch.wait_idle(), 5)
    run = await orchestrator.runs.get(accepted.run_id)

    assert run.status is RunStatus.KILLED and not script.release.is_set()
    assert await orchestrator.outbox.for_run(run.id) == []
    await stop(db, orchestrator)


async def test_a_wake_committed_but_never_started_before_the_stop_is_made_at_the_next_start(tmp_path, monkeypatch):
    """The process dies between the commit that wakes a run (its child ended) and the start of the wake's workflow:
    the next start wakes it, instead of announcing it ``interrupted``."""
    before = Script(("sessions_spawn", {"task": CHILD_TASK}))
    before.release.set()
    monkeypatch.setattr(RunDispatch, "wake", lambda self, run_id: None)  # lost with the process
    monkeypatch.setattr(LanePlaces, "hand_out", _nothing_handed_out)  # its place in line, never handed to it
    db, orchestrator = await start(tmp_path, before, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))

    async def woken_not_started() -> bool | None:
        children = await db.fetch_all("SELECT status FROM runs WHERE parent_run_id = ?", (accepted.run_id,))
        parent = await orchestrator.runs.get(accepted.run_id)
        return True if [row[0] for row in children] == ["completed"] and parent.status is RunStatus.RUNNING else None

    assert await orchestrator.core.ctx.signals.wait_for(woken_not_started, 10)
    assert (await orchestrator.runs.get(accepted.run_id)).lane_place is None  # woken, in line for a place
    await stays(  # its first turn, then the wait: no request since
        lambda: len(before.requests) == 2, for_seconds=0.5, describe=lambda: f"requests: {len(before.requests)}"
    )
    await stop(db, orchestrator)
    monkeypatch.undo()

    after = Script()
    after.release.set()
    db, orchestrator = await start(tmp_path, after, durable=True)
    await orchestrator.core.ctx.signals.wait_for(lambda: orchestrator_run_ended(orchestrator, accepted.run_id), 10)
    run = await orchestrator.runs.get(accepted.run_id)

    assert (run.status, run.result_text) == (RunStatus.COMPLETED, "resumed answer")
    assert "child done" in prompts(after.requests[0])[-1]  # the child's result, taken by the wake
    assert len(await db.fetch_all("SELECT id FROM runs WHERE parent_run_id = ?", (accepted.run_id,))) == 1
    assert len(await orchestrator.outbox.for_run(run.id)) == 1
    await stop(db, orchestrator)


async def _nothing_handed_out(self) -> list[tuple[str, bool]]:
    return []


async def test_a_spawn_committed_but_never_queued_before_the_stop_is_queued_at_the_next_start(tmp_path, monkeypatch):
    before = Script()
    monkeypatch.setattr(RunDispatch, "queue", lambda self, run_id, placed=False: None)  # lost with the process
    db, orchestrator = await start(tmp_path, before, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    assert (await orchestrator.runs.get(accepted.run_id)).status is RunStatus.QUEUED
    await stop(db, orchestrator)
    monkeypatch.undo()

    db, orchestrator, run, after = await completed_at_next_start(tmp_path, accepted.run_id)

    assert (run.status, run.result_text) == (RunStatus.COMPLETED, "resumed answer")
    assert before.requests == [] and len(after.requests) == 2
    assert len(await orchestrator.outbox.for_run(run.id)) == 1
    await stop(db, orchestrator)


async def test_a_cancellation_that_fails_leaves_the_run_killed_and_the_next_runs_starting(tmp_path, monkeypatch):
    script = Script()
    db, orchestrator = await start(tmp_path, script, durable=True)
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await script.waiting.wait()

    async def unreachable(self, run_id: str) -> None:
        raise ConnectionError("DBOS's database is down")

    monkeypatch.setattr(DurableRuns, "cancel", unreachable)
    with capture_logs() as logs:
        await orchestrator.core.commands.kill(accepted.run_id)
        await orchestrator.core.ctx.signals.wait_for(lambda: orchestrator_run_ended(orchestrator, accepted.run_id), 5)
        # the run ends at once here; the supervisor tries the cancellation after (a failed one is logged)
        await eventually(
            lambda: "run_workflow_not_cancelled" in [line["event"] for line in logs],
            timeout=5,
            describe="the failed cancellation logged",
        )
    assert (await orchestrator.runs.get(accepted.run_id)).status is RunStatus.KILLED

    script.release.set()
    script.requests.clear()
    script.calls = ()
    after = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="and this", origin=ORIGIN))
    await orchestrator.core.ctx.signals.wait_for(lambda: orchestrator_run_ended(orchestrator, after.run_id), 10)
    assert (await orchestrator.runs.get(after.run_id)).status is RunStatus.COMPLETED
    await stop(db, orchestrator)


async def test_a_workflow_handed_over_while_the_process_closes_is_left_pending_and_runs_at_the_next_start(
    tmp_path, monkeypatch
):
    handed_over = asyncio.Event()

    async def closing(run_id: str, woken: bool) -> None:
        handed_over.set()
        await closing_body(run_id, woken)

    closing_body = durable_runs_module._closing
    monkeypatch.setattr(durable_runs_module, "_closing", closing)
    before, runs = Script(), durable_runs(tmp_path)
    db, orchestrator = await start(tmp_path, before, durable=True, runs=runs)
    runs.stop_taking()  # as a close does first: DBOS may still hand over a workflow it took from its queue
    accepted = await orchestrator.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await asyncio.wait_for(handed_over.wait(), 10)
    await stop(db, orchestrator)
    monkeypatch.undo()

    db, orchestrator, run, after = await completed_at_next_start(tmp_path, accepted.run_id)

    await asyncio.wait_for(orchestrator.core.dispatch.wait_idle(), 10)
    workflows = await DBOS.list_workflows_async(workflow_id_prefix=accepted.run_id)

    assert (run.status, run.result_text) == (RunStatus.COMPLETED, "resumed answer")
    assert before.requests == [] and len(after.requests) == 2
    assert [(w.workflow_id, w.status) for w in workflows] == [(accepted.run_id, "SUCCESS")]
    assert len(await orchestrator.outbox.for_run(run.id)) == 1
    await stop(db, orchestrator)


def test_a_workflow_dequeued_while_the_loop_is_stopped_is_left_pending_and_runs_at_the_next_start(
    tmp_path, monkeypatch
):
    """DBOS starts a workflow on the loop it was launched on only while that loop runs (else on a loop of its own):
    between a test's body and its teardown, or on the way out of the process. A main-agent turn waits in DBOS's
    chat queue."""
    handed_over = threading.Event()  # set on DBOS's loop, in its thread

    async def closing(run_id: str, woken: bool) -> None:
        handed_over.set()
        await closing_body(run_id, woken)

    closing_body = durable_runs_module._closing
    monkeypatch.setattr(durable_runs_module, "_closing", closing)
    # taken at the worker's next poll, as a run queued by another process is: by then this loop stands still
    monkeypatch.setattr(QueueWakes, "wake", lambda wakes, *queues: None)
    loop = asyncio.new_event_loop()
    try:
        before = Script()
        db, orchestrator = loop.run_until_complete(start(tmp_path, before, durable=True, config_text=DEFAULT_POLLS))
        turn = loop.run_until_complete(orchestrator.chat(ChatRequest(text="find it", origin=ORIGIN)))

        async def enqueued() -> bool:
            return [w.status for w in await DBOS.list_workflows_async(workflow_ids=[turn])] == ["ENQUEUED"]

        loop.run_until_complete(eventually(enqueued, timeout=10, describe="the turn's workflow enqueued"))
        assert handed_over.wait(10)  # this loop stands still while DBOS's queue worker takes the workflow
        [workflow] = DBOS.list_workflows(workflow_ids=[turn])

        assert workflow.status == "PENDING" and before.requests == []  # taken, and left for the next start
        loop.run_until_complete(stop(db, orchestrator))
        monkeypatch.undo()

        db, orchestrator, run, after = loop.run_until_complete(completed_at_next_start(tmp_path, turn))

        assert (run.status, run.result_text) == (RunStatus.COMPLETED, "resumed answer")
        assert before.requests == [] and len(after.requests) == 2
        loop.run_until_complete(stop(db, orchestrator))
    finally:
        loop.close()


async def test_the_journal_in_a_sqlite_file_commits_without_waiting_for_the_disk_like_the_store(tmp_path):
    db, orchestrator = await start(tmp_path, Script(), durable=True)
    try:
        assert _dbos._dbos_global_instance is not None
        with _dbos._dbos_global_instance._sys_db.engine.connect() as connection:
            journal = connection.exec_driver_sql("PRAGMA synchronous").scalar()
        store = (await db.fetch_all("PRAGMA synchronous"))[0][0]
        assert journal == store == 1  # NORMAL (FULL, 2, is SQLite's default)
    finally:
        await stop(db, orchestrator)


async def test_a_process_keeps_nothing_per_run_it_queued_once_the_run_started(tmp_path):
    """Before: every workflow id queued here stayed in memory until someone waited for idleness (in the bot, never)."""
    script = Script()
    script.release.set()
    db, orchestrator = await start(tmp_path, script, durable=True)
    spawned = [
        await orchestrator.spawn(SpawnRequest(agent_id="researcher", task=f"find {i}", origin=ORIGIN)) for i in range(3)
    ]
    for accepted in spawned:
        await orchestrator.core.ctx.signals.wait_for(
            lambda run_id=accepted.run_id: orchestrator_run_ended(orchestrator, run_id), 10
        )
    assert orchestrator.core.dispatch._queued == set()
    await stop(db, orchestrator)


async def test_runs_waiting_for_the_lane_are_not_a_task_each(tmp_path):
    """A burst of spawns: the runs beyond the lane's places wait in line in the store, not as a task each
    (10,000 spawned at once were 10,000 tasks, each walked by every full garbage collection)."""
    script = Script()
    lane = DEFAULT_POLLS.replace("max_spawn_depth = 2\n", "max_spawn_depth = 2\nmax_queued_per_server = 1000\n")
    uncapped = "[discord]\nmax_active_runs_per_member = 0\n[budgets]\nmember_concurrent_runs = 0\n" + lane
    # a lane of 8, the rest queued
    db, orchestrator = await start(tmp_path, script, durable=True, config_text=uncapped)
    channels = [replace(ORIGIN, channel_id=channel, conversation=f"discord:channel:{channel}") for channel in range(4)]
    spawns = [SpawnRequest(agent_id="researcher", task=f"find {i}", origin=channels[i % 4]) for i in range(160)]
    accepted = await asyncio.gather(*(orchestrator.spawn(request) for request in spawns))
    tasks = len(asyncio.all_tasks())
    in_line = await orchestrator.core.ctx.repos.lane_places.line()
    assert len(in_line) >= 100, "the burst left no backlog to look at"  # (it only shrank meanwhile)
    assert tasks < 50  # the runs in flight (a lane of 8) and the bot's own: none per run waiting
    script.release.set()
    for run in accepted:
        await orchestrator.core.ctx.signals.wait_for(
            lambda run_id=run.run_id: orchestrator_run_ended(orchestrator, run_id), 30
        )
    await stop(db, orchestrator)
