"""The floor inside DBOS's least journal: what a durable run cannot cost less than while DBOS journals it.

Each run of the floor with an agent (``bench/floor.py``) becomes a DBOS workflow, started at once (no queue), whose
only step is the agent's run: DBOS records the workflow's start, its input, that step's output and its end, in the
journal file the bot's durable runs use (``durable.journal_store``: WAL, ``synchronous = NORMAL``). The bot journals
more (a step per model request and per tool call with an effect) and queues its runs; this is the cost of a
workflow at all. Compared with the floor plus an agent, it says how much of the overhead target's per-run budget
(1.3× that floor, in ``bench/targets.py``) DBOS takes before the bot does anything of its own.

Use: ``async with journaled(url, journal_url, agent) as floor: await floor.run(task)``. DBOS is one instance per
process: nothing else may launch it meanwhile.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from dbos import DBOS, DBOSConfig, SetWorkflowID
from pydantic_ai import Agent

from bench.floor import Floor
from bot.core.durable import journal_store

WORKFLOW = "bench.floor"
_floor: JournaledFloor | None = None  # DBOS is one instance per process: the floor its workflows run


@DBOS.workflow(name=WORKFLOW)
async def _floor_workflow(task: str) -> None:
    assert _floor is not None, "a floor workflow started outside journaled()"
    await Floor.run(_floor, task)  # the floor's own lifecycle: the journaled floor's run starts this workflow


class JournaledFloor(Floor):
    async def converse(self, task: str) -> tuple[str, ...]:
        """The agent's run as the workflow's one step: DBOS records its messages in the journal."""
        return await DBOS.run_step_async({"name": "agent.run"}, super().converse, task)

    async def run(self, task: str) -> None:
        with SetWorkflowID(str(uuid.uuid4())):  # as the core names each run's workflow
            await _floor_workflow(task)


@asynccontextmanager
async def journaled(url: str, journal_url: str, agent: Agent[None, str]) -> AsyncIterator[JournaledFloor]:
    """The floor on ``url`` with ``agent``, journaled by DBOS.

    DBOS is launched on ``journal_url`` for the while."""
    global _floor
    assert _floor is None, "DBOS is one instance per process: one journaled floor at a time"
    await journal_store.migrate(journal_url)
    config: DBOSConfig = {
        "name": "threadbound-bench",
        "system_database_url": journal_url,
        "application_version": "bench",
        "notification_listener_polling_interval_sec": journal_store.NOTICE_POLL_SECONDS,  # as the bot's
        "max_executor_threads": journal_store.executor_threads(journal_url),  # as the bot's
        "log_level": "WARNING",
    }
    try:
        DBOS(config=config)
        DBOS.launch()
        async with JournaledFloor.open(url, agent) as floor:
            _floor = floor
            yield floor
    finally:
        _floor = None
        await journal_store.destroy()
