"""Durable runs' places in the sub-agent lane: a run with room starts at once, without a queue; the others wait in
line in the store (no workflow, nothing in memory) and start as places free, never more at once than the lane has,
first in line first (one member's backlog behind another member's first run)."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

from dbos import DBOS
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from bot.core.durable import journal_store, starts
from bot.core.durable.durable_runs import DurableRuns
from bot.records import RunStatus
from tests.core_support import ORIGIN, ScriptedModels, first_prompt, running_core, settle
from tests.db_views import run_statuses
from tests.polling import eventually
from tests.test_fairness import LANE_OF_TWO, Work, spawn, statuses

ALICE, BOB = replace(ORIGIN, user_id=1), replace(ORIGIN, user_id=2)
LANE_OF_ONE = LANE_OF_TWO.replace("max_concurrent = 2", "max_concurrent = 1\nmax_spawn_depth = 2").replace(
    "[agents.list.main]",
    '[risk_profiles.team]\ndelegation_policy = { mode = "allow" }\n[agents.list.main]\nrisk_profile = "team"',
)


async def places(core) -> dict[str, tuple[str, str | None]]:
    """Each run's status and the process holding its lane place, by task."""
    rows = await core.core.ctx.repos.db.fetch_all("SELECT task, status, lane_place FROM runs")
    return {row[0]: (row[1], row[2]) for row in rows}


async def test_a_run_with_room_starts_at_once_without_a_queue_and_gives_its_place_back(tmp_path):
    work = Work()
    async with running_core(tmp_path, ScriptedModels(work=work), LANE_OF_TWO, durable=True) as core:
        run_id = await spawn(core, ALICE, "a")
        assert (await places(core))["a"][1] == "local"  # claimed with the run, in its transaction
        await eventually(lambda: work.started == ["a"], timeout=10, describe=lambda: f"started: {work.started}")
        [workflow] = await DBOS.list_workflows_async(workflow_ids=[run_id])
        assert (workflow.status, workflow.queue_name) == ("PENDING", None)  # started directly, in no queue
        assert (await places(core))["a"] == ("running", "local")

        work.finish("a")
        await settle(core, lambda: _all(core, "completed", 1))
        assert (await places(core))["a"] == ("completed", None)
        again = await spawn(core, BOB, "b")  # the place is free again: the next run takes it at once
        assert (await places(core))["b"][1] == "local"
        work.finish("b")
        await settle(core, lambda: _all(core, "completed", 2))
        assert [w.queue_name for w in await DBOS.list_workflows_async(workflow_ids=[again])] == [None]


async def test_runs_in_line_have_no_workflow_and_start_first_in_line_first_never_more_than_the_lane(tmp_path):
    work = Work()
    async with running_core(tmp_path, ScriptedModels(work=work), LANE_OF_TWO, durable=True) as core:
        ids = {task: await spawn(core, origin, task) for origin, task in [(ALICE, "a0"), (ALICE, "a1"), (ALICE, "a2")]}
        ids |= {task: await spawn(core, BOB, task) for task in ("b0", "b1", "b2")}
        await eventually(lambda: sorted(work.started) == ["a0", "a1"], timeout=10, describe=lambda: work.started)
        waiting = ["a2", "b0", "b1", "b2"]
        assert {task: (await places(core))[task] for task in waiting} == dict.fromkeys(waiting, ("queued", None))
        assert await DBOS.list_workflows_async(workflow_ids=[ids[task] for task in waiting]) == []  # rows only
        listed = await statuses(core)
        assert [listed[task] for task in ("b0", "b1", "a2", "b2")] == [
            "queued, 1st in line",  # Bob's first, before Alice's third
            "queued, 2nd in line",
            "queued, 3rd in line",
            "queued, 4th in line",
        ]

        next_up = {"a0": "b0", "a1": "b1", "b0": "a2", "b1": "b2"}  # who takes the place each run gives back
        for done in ("a0", "a1", "b0", "b1", "a2", "b2"):
            work.finish(done)
            if done in next_up:
                await settle(core, lambda done=done: next_up[done] in work.started)
            now = (await places(core)).values()
            assert sum(place is not None for _, place in now) <= 2 and sum(s == "running" for s, _ in now) <= 2
        await settle(core, lambda: _all(core, "completed", 6))
        assert work.started[2:] == ["b0", "b1", "a2", "b2"]
        assert all(place is None for _, place in (await places(core)).values())


class Family:
    """The parent spawns a child and waits for it; the child answers; the parent then answers with its result."""

    def __init__(self) -> None:
        self.order: list[str] = []

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        task = first_prompt(messages)
        self.order.append(task)
        if task == "child":
            return ModelResponse(parts=[TextPart("child done")])
        returned = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returned:
            return ModelResponse(parts=[ToolCallPart("sessions_spawn", {"task": "child"})])
        return ModelResponse(parts=[TextPart("parent done")])


async def test_a_run_waiting_for_its_child_gives_its_place_to_it_and_waits_in_line_when_woken(tmp_path):
    """A lane of one: the parent holds the only place until it waits for its child, which then takes it; the child's
    end wakes the parent, which takes the place again."""
    family = Family()
    async with running_core(tmp_path, ScriptedModels(work=family), LANE_OF_ONE, durable=True) as core:
        parent = await spawn(core, ALICE, "parent")
        await settle(core, lambda: _all(core, "completed", 2), timeout=20)
        run = await core.runs.get(parent)
        assert (run.status, run.result_text, run.lane_place) == (RunStatus.COMPLETED, "parent done", None)
        assert family.order == ["parent", "parent", "child", "parent"]  # the child only once the parent waited


async def spawn_burst(core, count: int) -> list[str]:
    """``count`` spawns in a row, Alice's and Bob's in turn; their tasks."""
    tasks = [f"r{i}" for i in range(count)]
    for i, task in enumerate(tasks):
        await spawn(core, ALICE if i % 2 else BOB, task)
    return tasks


async def _all(core, status: str, count: int) -> bool:
    return await run_statuses(core) == [status] * count


async def _succeeded(count: int) -> list | None:
    """DBOS's workflows, once there are ``count`` and all of them succeeded."""
    workflows = await DBOS.list_workflows_async()
    return workflows if len(workflows) == count and all(w.status == "SUCCESS" for w in workflows) else None


async def test_a_burst_as_wide_as_the_lane_starts_a_bounded_number_of_workflows_at_a_time(tmp_path, monkeypatch):
    """Every run of the burst finds a place as it is stored; while DBOS is slow to start workflows, only three start
    at once and the rest wait their turn (no task each); yet every run starts, runs and gives its place back."""
    monkeypatch.setattr(starts, "WIDTH", 3)
    gate, entered = asyncio.Event(), []
    start = DurableRuns.start

    async def slow_start(self, run_id: str, **kwargs):
        entered.append(run_id)
        await gate.wait()
        return await start(self, run_id, **kwargs)

    monkeypatch.setattr(DurableRuns, "start", slow_start)
    work = Work()
    wide = LANE_OF_TWO.replace("max_concurrent = 2", "max_concurrent = 12")
    async with running_core(tmp_path, ScriptedModels(work=work), wide, durable=True) as core:
        tasks = await spawn_burst(core, 12)
        assert all(place == "local" for _, place in (await places(core)).values())  # each claimed with its run
        await eventually(lambda: len(entered) == 3, timeout=10, describe=lambda: entered)
        await asyncio.sleep(0.2)
        assert len(entered) == 3 and len(core.core.dispatch._tasks) == 3  # the other nine: run ids in a deque
        gate.set()
        await eventually(lambda: sorted(work.started) == sorted(tasks), timeout=20, describe=lambda: work.started)
        for task in tasks:
            work.finish(task)
        await settle(core, lambda: _all(core, "completed", 12), timeout=20)
        assert all(place is None for _, place in (await places(core)).values())
        # each started from the place another's body freed, yet none a child of it: its own workflow, journaled alone
        workflows = await eventually(
            lambda: _succeeded(12), timeout=20, describe="twelve workflows that succeeded"
        )  # a workflow records its end in the journal after its run's end is stored
        assert [w.workflow_id for w in workflows if w.parent_workflow_id is not None] == []


async def test_a_run_whose_workflow_failed_to_start_is_started_again_without_a_restart(tmp_path, monkeypatch):
    """DBOS's database fails the first start (its pool ran dry, say): the run keeps its place and starts a moment
    later, in the same process; then it completes and gives its place back."""
    start, failed = DurableRuns.start, []

    async def failing_once(self, run_id: str, **kwargs):
        if not failed:
            failed.append(run_id)
            raise RuntimeError("QueuePool limit of size 20 overflow 0 reached")
        return await start(self, run_id, **kwargs)

    monkeypatch.setattr(DurableRuns, "start", failing_once)
    work = Work()
    quick = LANE_OF_TWO + "[durability]\nqueue_poll_seconds = 0.2\n"
    async with running_core(tmp_path, ScriptedModels(work=work), quick, durable=True) as core:
        run_id = await spawn(core, ALICE, "a")
        await eventually(lambda: failed == [run_id], timeout=5, describe=lambda: failed)
        assert (await places(core))["a"] == ("queued", "local")  # not started, still holding its place
        await eventually(lambda: work.started == ["a"], timeout=10, describe=lambda: f"started: {work.started}")
        work.finish("a")
        await settle(core, lambda: _all(core, "completed", 1))
        assert (await places(core))["a"] == ("completed", None)


async def test_a_burst_of_runs_ending_together_journals_on_a_bounded_number_of_threads(tmp_path):
    """DBOS's journal writes (and the loop's ``asyncio.to_thread`` calls) share a few threads: forty runs ending at
    once wait for one, where each would have had a thread of its own, all contending for the GIL with the loop."""
    work = Work()
    wide = LANE_OF_TWO.replace("max_concurrent = 2", "max_concurrent = 40")
    async with running_core(tmp_path, ScriptedModels(work=work), wide, durable=True) as core:
        tasks = await spawn_burst(core, 40)
        await eventually(lambda: sorted(work.started) == sorted(tasks), timeout=20, describe=lambda: work.started)
        for task in tasks:
            work.finish(task)
        await settle(core, lambda: _all(core, "completed", 40), timeout=30)
        journaling = [t.name for t in threading.enumerate() if t.name.startswith("dbos-executor-")]
        assert 1 < len(journaling) <= journal_store.SQLITE_THREADS, journaling  # idle ones stay until the stop
