"""Durable runs off, a run waiting for the sub-agent lane is a small entry in it, not a task: 300 runs queued
behind a lane of one add no task each and grow the heap by at most 5 KiB each, then all run in the lane's fair order,
however they end (a kill, a failure), and a close leaves no task behind."""

from __future__ import annotations

import asyncio
import tracemalloc
from dataclasses import replace

from pydantic_ai.messages import ModelResponse, TextPart

from bot.records import RunStatus
from tests.core_support import ScriptedModels, first_prompt, running_core, settle
from tests.test_fairness import ALICE, BOB, LANE_OF_TWO, spawn, statuses

RUNS = 300
ALICES = 200  # then Bob's 100: each of his goes before the rest of Alice's backlog, one for one
BOB_ELSEWHERE = replace(BOB, guild_id=2, channel_id=200, conversation="discord:channel:200")
LANE_OF_ONE = LANE_OF_TWO.replace(
    "max_concurrent = 2", "max_concurrent = 1\nmax_queued = 5000\nmax_queued_per_server = 5000"
)


class HeldFirst:
    """A model that holds the run whose task is ``first`` until the test lets it go, fails the run named ``fails``
    and answers every other at once; records the order runs reach it."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, messages, info) -> ModelResponse:
        task = first_prompt(messages)
        self.started.append(task)
        if task == "first":
            await self.release.wait()
        if task == "fails":
            raise RuntimeError("the model broke")
        return ModelResponse(parts=[TextPart(f"{task} done")])


async def test_runs_queued_behind_a_lane_of_one_hold_no_task_and_under_5_kib_each_then_run_in_fair_order(tmp_path):
    model = HeldFirst()
    async with running_core(tmp_path, ScriptedModels(work=model), LANE_OF_ONE) as core:
        await spawn(core, ALICE, "first")
        await settle(core, lambda: model.started == ["first"])
        tasks_before = len(asyncio.all_tasks())
        tracemalloc.start()
        try:
            heap_before = tracemalloc.get_traced_memory()[0]
            ids = [await spawn(core, ALICE, f"a{i}") for i in range(ALICES)]
            ids += [await spawn(core, BOB, f"b{i}") for i in range(RUNS - ALICES)]
            await settle(core, lambda: _all_in_line(core, RUNS), timeout=60)
            grown = tracemalloc.get_traced_memory()[0] - heap_before
        finally:
            tracemalloc.stop()
        assert len(asyncio.all_tasks()) - tasks_before <= 5, "a queued run holds a task"
        assert grown / RUNS <= 5 * 1024, f"{grown / RUNS:.0f} bytes per queued run"
        assert model.started == ["first"]

        fair = [task for i in range(RUNS - ALICES) for task in (f"a{i}", f"b{i}")]
        fair += [f"a{i}" for i in range(RUNS - ALICES, ALICES)]
        places = await core.core.dispatch.lane_places()
        assert [places[run_id] for run_id in ids[:2]] == [1, 3] and places[ids[ALICES]] == 2  # Bob's first: 2nd
        model.release.set()
        await settle(core, lambda: len(model.started) == RUNS + 1, timeout=120)
        assert model.started == ["first", *fair]
        await core.core.dispatch.wait_idle()
        assert {(await core.runs.get(run_id)).status for run_id in ids} == {RunStatus.COMPLETED}
        assert await core.core.dispatch.lane_places() == {}


async def _all_in_line(core, count: int) -> bool:
    return len(await core.core.dispatch.lane_places()) == count


async def test_a_slot_is_given_back_however_its_run_ends_and_a_close_leaves_no_queued_run_a_task(tmp_path):
    """The slot moves on after a failure and after a kill of the running run; a kill of a waiting run moves the
    runs behind it up; closing with runs in line starts none of them; after a restart they are interrupted."""
    model = HeldFirst()
    tasks_before = len(asyncio.all_tasks())
    async with running_core(tmp_path, ScriptedModels(work=model), LANE_OF_ONE) as core:
        first = await spawn(core, ALICE, "first")
        await settle(core, lambda: model.started == ["first"])
        fails = await spawn(core, BOB_ELSEWHERE, "fails")  # one lane for every server
        waiting = await spawn(core, ALICE, "killed waiting")
        after = await spawn(core, BOB, "after")
        await settle(core, lambda: _all_in_line(core, 3))
        await core.core.commands.kill(waiting)
        assert await core.core.dispatch.lane_places() == {fails: 1, after: 2}
        assert (await statuses(core))["after"] == "queued, 2nd in line"

        await core.core.commands.kill(first)  # the running run: its slot goes to the next in line
        await settle(core, lambda: model.started == ["first", "fails", "after"])
        await settle(core, lambda: _status(core, fails, RunStatus.FAILED))
        await settle(core, lambda: _status(core, after, RunStatus.COMPLETED))
        assert (await core.runs.get(waiting)).status is RunStatus.KILLED

        held = [await spawn(core, ALICE, "first")]
        await settle(core, lambda: model.started.count("first") == 2)
        held += [await spawn(core, BOB, f"left {i}") for i in range(3)]
        await settle(core, lambda: _all_in_line(core, 3))
    assert len(asyncio.all_tasks()) <= tasks_before, "a task left behind by the close"
    assert model.started.count("left 0") == 0

    async with running_core(tmp_path, ScriptedModels(work=model), LANE_OF_ONE) as core:  # a restart
        assert {(await core.runs.get(run_id)).status for run_id in held} == {RunStatus.INTERRUPTED}
        await spawn(core, BOB, "again")
        await settle(core, lambda: "again" in model.started)


async def _status(core, run_id: str, status: RunStatus) -> bool:
    return (await core.runs.get(run_id)).status is status
