"""Fair lanes through the real orchestrator: another member's first spawn starts within one slot turnover of a
40-run backlog, a queued run knows its place (in the order runs will start), a killed queued run gives its place
up, and the queue cap refuses a spawn — a person's or an agent's — or a follow-up before anything is written."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import replace

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from bot.core.errors import SpawnRefused
from bot.core.runs.requests import SpawnRequest
from bot.records import RunStatus
from tests.core_support import (
    ORIGIN,
    Script,
    ScriptedModels,
    chat_and_wait,
    first_prompt,
    running_core,
    settle,
)
from tests.db_views import queued_per_guild, run_requesters, run_statuses, spawn_footprint
from tests.polling import eventually, stays

LANE_OF_TWO = """
[discord]
max_active_runs_per_member = 0
[budgets]
member_concurrent_runs = 0
[agents.defaults]
model = "test/work"
[agents.defaults.subagents]
announce = "direct"
max_concurrent = 2
[agents.list.main]
"""
ALICE, BOB = replace(ORIGIN, user_id=1), replace(ORIGIN, user_id=2)


class Work:
    """A model whose run, named by its task, answers only when the test finishes it; records the start order."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self._finish: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)

    async def __call__(self, messages, info) -> ModelResponse:
        task = first_prompt(messages)
        self.started.append(task)
        await self._finish[task].wait()
        return ModelResponse(parts=[TextPart(f"{task} done")])

    def finish(self, task: str) -> None:
        self._finish[task].set()


async def spawn(core, origin, task: str) -> str:
    return (await core.spawn(SpawnRequest(agent_id="main", task=task, origin=origin))).run_id


async def statuses(core) -> dict[str, str]:
    """Each sub-agent's status as ``/subagents list`` words it, by task."""
    return {row.session.task: row.status for row in await core.core.queries.children("agent:main:discord:channel:100")}


async def test_another_members_first_spawn_starts_within_one_slot_turnover_of_a_40_run_backlog(tmp_path):
    work = Work()
    async with running_core(tmp_path, ScriptedModels(work=work), LANE_OF_TWO) as core:
        for i in range(40):
            await spawn(core, ALICE, f"a{i}")
        await settle(core, lambda: sorted(work.started) == ["a0", "a1"])  # at once: either may reach its model first
        await spawn(core, BOB, "b")
        await settle(core, lambda: _place_known(core, "b"))
        assert (await statuses(core))["b"] == "queued, 2nd in line"  # a2 was next before b came

        work.finish("a0")
        await settle(core, lambda: len(work.started) == 3)
        work.finish("a1")
        await settle(core, lambda: len(work.started) == 4)
        assert work.started[2:] == ["a2", "b"]  # one of Alice's backlog went between Bob's spawn and start
        listed = await statuses(core)
        assert listed["b"] == "running"
        assert [listed[f"a{i}"] for i in (3, 4, 39)] == [
            "queued, 1st in line",
            "queued, 2nd in line",
            "queued, 37th in line",
        ]


async def _place_known(core, task: str) -> bool:
    return (await statuses(core))[task].startswith("queued, ")


async def test_killing_a_queued_run_moves_the_runs_behind_it_up_at_once(tmp_path):
    work = Work()
    async with running_core(tmp_path, ScriptedModels(work=work), LANE_OF_TWO) as core:
        for i in range(2):
            await spawn(core, ALICE, f"busy{i}")
        ahead = await spawn(core, ALICE, "ahead")
        behind = await spawn(core, BOB, "behind")
        await settle(core, lambda: _place_known(core, "behind"))
        assert (await statuses(core))["behind"] == "queued, 2nd in line"

        await core.core.commands.kill(ahead)
        assert (await core.runs.get(ahead)).status is RunStatus.KILLED
        assert (await statuses(core))["behind"] == "queued, 1st in line"
        work.finish("busy0")
        await settle(core, lambda: len(work.started) == 3)
        assert sorted(work.started[:2]) == ["busy0", "busy1"] and work.started[2] == "behind"  # the pair: in any order
        assert (await core.runs.get(behind)).status is RunStatus.RUNNING


FULL_AT_TWO = """
[agents.defaults]
model = "test/script"
[agents.defaults.subagents]
announce = "direct"
model = "test/work"
max_concurrent = 1
max_queued = 2
max_queued_per_server = 2  # one server: its share is the whole queue
[agents.list.main]
"""
QUEUE_FULL = (
    "The sub-agent queue is full (2 runs waiting, agents.defaults.subagents.max_queued = 2); try again when some have "
    "started."
)


async def test_a_full_queue_refuses_spawns_and_follow_ups_before_anything_is_written(tmp_path):
    work = Work()
    script = Script(("sessions_spawn", {"task": "from the agent"}))
    async with running_core(tmp_path, ScriptedModels(work=work, script=script), FULL_AT_TWO) as core:
        finished = await spawn(core, ALICE, "finished")
        work.finish("finished")
        await settle(core, lambda: _ended(core, finished))
        await spawn(core, ALICE, "running")
        await settle(core, lambda: work.started == ["finished", "running"])
        for task in ("waits 1", "waits 2"):
            await spawn(core, ALICE, task)
        before = await spawn_footprint(core)

        with pytest.raises(SpawnRefused) as refused:
            await spawn(core, BOB, "one more")
        assert str(refused.value) == QUEUE_FULL
        await chat_and_wait(core)  # a main-agent turn is not in the sub-agent lane: it runs, and its spawn is refused
        assert script.results == [{"status": "forbidden", "error": QUEUE_FULL}]
        finished_run = await core.runs.get(finished)
        with pytest.raises(SpawnRefused) as refused:  # a follow-up would wait in the same queue
            await core.core.commands.follow_up(await core.sessions.get(finished_run.session_key), "again", finished_run)
        assert str(refused.value) == QUEUE_FULL
        assert await spawn_footprint(core) == before

        work.finish("running")
        await settle(core, lambda: work.started == ["finished", "running", "waits 1"])
        assert (await spawn(core, BOB, "room again")) is not None


SHARE_OF_TWO = FULL_AT_TWO.replace(
    "max_queued = 2\nmax_queued_per_server = 2  # one server: its share is the whole queue",
    "max_queued = 3\nmax_queued_per_server = 2",
)
SHARE_FULL = (
    "The sub-agent queue is full on this server (2 runs waiting, agents.defaults.subagents.max_queued_per_server = "
    "2); try again when some have started."
)


async def test_a_server_at_its_share_refuses_spawns_and_follow_ups_while_other_servers_and_dms_still_queue(tmp_path):
    work = Work()
    script = Script(("sessions_spawn", {"task": "from the agent"}))
    elsewhere = replace(ORIGIN, guild_id=2, channel_id=200, conversation="discord:channel:200")
    dm = replace(ORIGIN, guild_id=None, channel_id=300, conversation="discord:dm:7")
    async with running_core(tmp_path, ScriptedModels(work=work, script=script), SHARE_OF_TWO) as core:
        finished = await spawn(core, ALICE, "finished")
        work.finish("finished")
        await settle(core, lambda: _ended(core, finished))
        await spawn(core, ALICE, "running")
        await settle(core, lambda: work.started == ["finished", "running"])
        for origin, task in ((ALICE, "waits 1"), (BOB, "waits 2")):
            await spawn(core, origin, task)
        before = await spawn_footprint(core)

        with pytest.raises(SpawnRefused) as refused:  # a person's spawn, an agent's, a follow-up: the same share
            await spawn(core, BOB, "one more")
        assert str(refused.value) == SHARE_FULL
        await chat_and_wait(core)
        assert script.results == [{"status": "forbidden", "error": SHARE_FULL}]
        finished_run = await core.runs.get(finished)
        with pytest.raises(SpawnRefused) as refused:
            await core.core.commands.follow_up(await core.sessions.get(finished_run.session_key), "again", finished_run)
        assert str(refused.value) == SHARE_FULL
        assert await spawn_footprint(core) == before

        # another server's first run fills the queue (3); direct messages' first still gets in, as one server's
        assert await spawn(core, replace(elsewhere, user_id=BOB.user_id), "elsewhere") is not None
        with pytest.raises(SpawnRefused) as refused:
            await spawn(core, elsewhere, "elsewhere again")
        assert str(refused.value) == QUEUE_FULL.replace("2 runs", "3 runs").replace("max_queued = 2", "max_queued = 3")
        assert await spawn(core, dm, "in a dm") is not None
        assert sorted(await queued_per_guild(core), key=str) == sorted([(1, 2), (2, 1), (None, 1)], key=str)


async def _ended(core, run_id: str) -> bool:
    return (await core.runs.get(run_id)).status.is_terminal


def fan_out(messages, info) -> ModelResponse:
    """``spawn <task>`` spawns a child with ``<task>`` once; anything else answers at once."""
    prompt = first_prompt(messages)
    if prompt.startswith("spawn ") and len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("sessions_spawn", {"task": prompt.removeprefix("spawn ")})])
    return ModelResponse(parts=[TextPart("ok")])


async def test_a_grandchild_waits_in_its_members_bucket_under_the_top_level_run_it_descends_from(tmp_path):
    config = (
        '[agents.defaults]\nmodel = "test/fan"\n[agents.defaults.subagents]\nannounce = "direct"\nmax_spawn_depth = 2\n'
        "[agents.list.main]\n"
    )
    async with running_core(tmp_path, ScriptedModels(fan=fan_out), config) as core:
        top = await chat_and_wait(core, "spawn spawn leaf")
        await core.core.dispatch.wait_idle()
        rows = await run_requesters(core)
        assert [(task, member) for _, task, member in rows] == [
            ("spawn spawn leaf", ORIGIN.user_id),
            ("spawn leaf", ORIGIN.user_id),
            ("leaf", ORIGIN.user_id),
        ]
        assert [await core.runs.root_of(run_id) for run_id, _, _ in rows] == [top, top, top]


async def test_with_durable_runs_another_members_first_spawn_goes_before_a_backlog(tmp_path):
    """Durable runs wait in DBOS's queue, shared by every process: a member with fewer runs in the lane goes first."""
    work = Work()
    async with running_core(tmp_path, ScriptedModels(work=work), LANE_OF_TWO, durable=True) as core:
        for i in range(10):
            await spawn(core, ALICE, f"a{i}")
        await eventually(  # started together, in either order
            lambda: sorted(work.started) == ["a0", "a1"], timeout=10, describe=lambda: f"a0, a1 started: {work.started}"
        )
        await spawn(core, BOB, "b")
        await settle(core, lambda: _place_known(core, "b"))  # queued in DBOS by the dispatch task, a moment later
        listed = await statuses(core)
        assert (listed["b"], listed["a2"], listed["a9"]) == (
            "queued, 1st in line",
            "queued, 2nd in line",
            "queued, 9th in line",
        )

        work.finish("a0")
        await settle(core, lambda: len(work.started) == 3)
        assert work.started[2:] == ["b"]
        await stays(  # three polls of the queue: the lane is full
            lambda: len(work.started) == 3, for_seconds=0.3, describe=lambda: f"no fourth run started: {work.started}"
        )
        assert len(work.started) == 3 and (await statuses(core))["a2"] == "queued, 1st in line"
        for task in ("a1", "b", *(f"a{i}" for i in range(2, 10))):
            work.finish(task)
        await settle(core, lambda: _all_completed(core, 11))


async def test_with_durable_runs_killing_a_queued_run_takes_it_out_of_the_queue(tmp_path):
    work = Work()
    async with running_core(tmp_path, ScriptedModels(work=work), LANE_OF_TWO, durable=True) as core:
        for i in range(2):
            await spawn(core, ALICE, f"busy{i}")
        await eventually(
            lambda: sorted(work.started) == ["busy0", "busy1"], timeout=10, describe=lambda: f"started: {work.started}"
        )
        ahead = await spawn(core, ALICE, "ahead")
        behind = await spawn(core, ALICE, "behind")
        await settle(core, lambda: _place_known(core, "behind"))
        assert (await statuses(core))["behind"] == "queued, 2nd in line"

        await core.core.commands.kill(ahead)
        await settle(core, lambda: _is(core, "behind", "queued, 1st in line"))
        work.finish("busy0")
        await settle(core, lambda: work.started[2:] == ["behind"])
        assert (await core.runs.get(behind)).status is RunStatus.RUNNING
        assert (await core.runs.get(ahead)).status is RunStatus.KILLED


async def _is(core, task: str, status: str) -> bool:
    return (await statuses(core))[task] == status


async def _all_completed(core, count: int) -> bool:
    return await run_statuses(core) == ["completed"] * count
