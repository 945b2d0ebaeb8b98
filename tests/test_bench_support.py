"""The parts of ``bench/`` its numbers rest on (not timings): the floor does a delivered run's durable writes into the
real schema, on either store; the delivery sink delivers a run's announcement, and only in its own channels, so
processes sharing a store do not take each other's (a worker would wait forever for one taken elsewhere); a results
table prints each number under its column's title."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from dataclasses import replace

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

from bench import journal_floor
from bench.durability import floor_path
from bench.floor import Floor
from bench.journal_floor import WORKFLOW
from bench.sink import DeliverySink
from bench.table import STORE, Column, Table
from bot.core.runs.requests import SpawnRequest
from tests import stores
from tests.core_support import ORIGIN, ScriptedModels, running_core, settle, text
from tests.db_views import announcements

CONFIG = '[agents.defaults]\nmodel = "test/instant"\n'


def assert_both_runs_delivered_with_two_messages(path):
    rows = stores.query(
        path,
        "SELECT r.task, r.status, o.status, (SELECT COUNT(*) FROM transcript_messages t WHERE t.run_id = r.id) "
        "FROM runs r JOIN outbox o ON o.run_id = r.id ORDER BY r.task",
    )
    assert rows == [("first task", "completed", "delivered", 2), ("second task", "completed", "delivered", 2)]


async def test_the_floor_leaves_each_run_completed_with_its_two_messages_and_its_announcement_delivered(tmp_path):
    path = tmp_path / "floor.sqlite3"
    async with Floor.open(stores.database(path), Agent(FunctionModel(text("the answer")))) as floor:
        await asyncio.gather(floor.run("first task"), floor.run("second task"))

    assert_both_runs_delivered_with_two_messages(path)
    messages = [json.loads(row[0]) for row in stores.query(path, "SELECT message_json FROM transcript_messages")]
    assert sorted(message["kind"] for message in messages) == ["request", "request", "response", "response"]
    answers = [part["content"] for message in messages if message["kind"] == "response" for part in message["parts"]]
    assert answers == ["the answer", "the answer"]


async def test_the_journaled_floor_makes_each_run_one_dbos_workflow_whose_one_step_is_the_agents_run(tmp_path):
    model = FunctionModel(text("the answer"))
    for name in ("first", "second"):  # DBOS launched and stopped each time: each journal holds only its own runs
        path = tmp_path / f"{name}.sqlite3"
        async with floor_path(stores.database(path), agent=True, model=model, journal=str(tmp_path / name)) as run:
            await asyncio.gather(*[await run(task) for task in ("first task", "second task")])

        assert journal_floor._floor is None
        assert_both_runs_delivered_with_two_messages(path)
        with closing(sqlite3.connect(tmp_path / f"{name}.dbos")) as connection:
            workflows = connection.execute(
                "SELECT w.name, w.status, (SELECT group_concat(s.function_name) FROM operation_outputs s "
                "WHERE s.workflow_uuid = w.workflow_uuid) FROM workflow_status w"
            ).fetchall()
        assert workflows == [(WORKFLOW, "SUCCESS", "agent.run"), (WORKFLOW, "SUCCESS", "agent.run")]


async def test_the_sink_delivers_announcements_in_its_own_channels_and_leaves_the_others(tmp_path):
    elsewhere_origin = replace(ORIGIN, channel_id=200, conversation="discord:channel:200")
    async with running_core(tmp_path, ScriptedModels(instant=text("done")), CONFIG) as core:
        sink = DeliverySink(core, core._db, channels={ORIGIN.channel_id})
        sink.start()
        elsewhere = await core.spawn(SpawnRequest(agent_id="main", task="not mine", origin=elsewhere_origin))

        async def announced_elsewhere() -> bool:
            return any(row.run_id == elsewhere.run_id for row in await announcements(core))

        await settle(core, announced_elsewhere)
        here = await core.spawn(SpawnRequest(agent_id="main", task="mine", origin=ORIGIN))
        await asyncio.wait_for(sink.delivered(here.run_id), timeout=10)
        await sink.close()
        rows = await announcements(core)

    assert [tuple(row) for row in rows] == [(elsewhere.run_id, 200, "pending"), (here.run_id, 100, "delivered")]


def test_a_table_prints_each_value_under_its_title_and_refuses_a_row_of_the_wrong_length():
    table = Table(STORE, Column("processes", 10), Column("runs/s", 9, ".1f"), Column("of ideal", 10, ".0%"))

    assert table.header() == "store       processes   runs/s  of ideal"
    assert table.row("postgresql", 2, 17.44, 0.5) == "postgresql          2     17.4       50%"
    assert table.row("sqlite", 1, 9.0, 1.25) == "sqlite              1      9.0      125%"
    with pytest.raises(ValueError):
        table.row("sqlite", 1, 9.0)
