"""Durable runs (``[durability] resume_interrupted``): a run's body is a DBOS workflow whose id is the run id, so a
run cut off by a crash, a kill of the process or a restart resumes at the next start from its last completed step.

What the journal holds, in order: the run taken from the queue (``run.start``), each turn's starting point
(``turn.start``: the run's usage so far and how much of the session's history and of its own transcript was stored),
every model request (``model.request``, :mod:`bot.agents.journal`), every take of a sub-agent's inbox
(``inbox.take``) and every ``sessions_spawn``. Recovery replays those from the journal: a completed model request is
not sent again; a steer or a child's result taken before the crash reaches the model again; a child spawned before it
is not spawned again. Other tools are not journaled: a tool call the crash cut off, or whose response was not yet
answered, runs again. Transcript rows and budget spending already stored are
not stored twice (the ``turn.start`` positions tell them apart).

DBOS is one instance per process, launched on the running loop (``setup_hook``): workflows it recovers or takes from
its queues run on that loop, next to the database connection they use. At launch a process recovers only the
workflows of its own ``executor_id`` and ``application_version``; a dead process's are handed on by the janitor
(:mod:`bot.core.executors`, through ``pending_of`` and ``resume``: DBOS's internal queue, which any live process
takes from). A live run whose workflow nobody recovers (another version, none at all) is settled ``interrupted``.

The system database follows the store: with PostgreSQL the same database (DBOS's tables in its ``dbos`` schema), so
processes on several machines share it; with SQLite a file next to the store's (processes on one host share it).
``[durability] system_database`` (a path, or a ``postgresql://`` url) overrides both.

A workflow is recorded step by step: a deploy that changes which steps a run takes, or their order, must change
``application_version`` (its in-flight runs are then reported interrupted, not replayed into the wrong steps).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import sqlalchemy.exc
import structlog
from dbos import DBOS, DBOSClient, DBOSConfig, SetWorkflowID

from bot.agents.journal import in_workflow
from bot.config import DurabilityConfig, StorageConfig
from storage.db import is_postgresql

log = structlog.get_logger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
RunBody = Callable[[str], Awaitable[None]]
_SCHEMA_WAITS = 20  # half-seconds a start waits for another process creating DBOS's tables
WORKFLOW = "threadbound.run"

_body: RunBody | None = None  # DBOS is one instance per process: the launched executor's run body


@DBOS.workflow(name=WORKFLOW)
async def _run_workflow(run_id: str) -> None:
    assert _body is not None, "a run workflow started before DBOS was launched"
    await _body(run_id)


async def step(name: str, fn: Callable[P, Coroutine[Any, Any, R]], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn`` as a DBOS step in a run's workflow (on recovery its recorded result comes back), else a plain call."""
    if not in_workflow():
        return await fn(*args, **kwargs)
    return await DBOS.run_step_async({"name": name}, fn, *args, **kwargs)


def _prepare(path: Path) -> bool:
    """Put the file in WAL mode before DBOS opens it (about half the time per checkpoint of SQLite's rollback
    journal); whether DBOS created its tables in it already."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        return connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'workflow_status'").fetchone() is not None
    finally:
        connection.close()


def system_database_url(config: DurabilityConfig, storage: StorageConfig) -> str:
    """Where DBOS keeps its journal: ``system_database`` if set, else the PostgreSQL store, else the SQLite file."""
    chosen = config.system_database or (storage.url if storage.url and is_postgresql(storage.url) else None)
    if chosen is not None and is_postgresql(chosen):
        return chosen
    return f"sqlite:///{Path(chosen or f'{storage.local_file}.dbos').resolve()}"


async def _has_journal(url: str) -> bool:
    """Whether DBOS created its tables there already (a SQLite file is put in WAL mode first)."""
    if not is_postgresql(url):
        return await asyncio.to_thread(_prepare, Path(url.removeprefix("sqlite:///")))
    import psycopg

    async with await psycopg.AsyncConnection.connect(url) as connection:
        cursor = await connection.execute("SELECT to_regclass('dbos.workflow_status') IS NOT NULL")
        row = await cursor.fetchone()
    return bool(row and row[0])


class DurableRuns:
    def __init__(self, config: DurabilityConfig, storage: StorageConfig) -> None:
        self._config = config
        self._url = system_database_url(config, storage)

    async def launch(self, body: RunBody) -> set[str]:
        """Launch DBOS on the running loop, with ``body`` as every run's workflow; the ids of the runs whose
        workflows it recovers (they start once ``body`` lets them)."""
        global _body
        recovering = await self._recoverable()
        _body = body
        config: DBOSConfig = {
            "name": "threadbound",
            "system_database_url": self._url,
            "application_version": self._config.application_version,
            "executor_id": self._config.executor_id,
            "notification_listener_polling_interval_sec": 0.1,  # also how long a stop waits for that thread
            "log_level": "WARNING",  # its info lines (a line per schema migration) say less than durable_runs_launched
        }
        DBOS(config=config)
        DBOS.launch()
        log.info("durable_runs_launched", recovering=len(recovering), executor_id=self._config.executor_id)
        return recovering

    async def _recoverable(self) -> set[str]:
        """What ``_pending`` says, once DBOS's tables are there and whole: processes starting together on a new
        PostgreSQL store wait while the first creates them (DBOS serialises its migrations, not this read)."""
        for _ in range(_SCHEMA_WAITS):
            try:
                return await self._pending() if await _has_journal(self._url) else set()
            except sqlalchemy.exc.ProgrammingError as error:
                log.info("durable_journal_being_migrated", error=type(error.orig).__name__)
                await asyncio.sleep(0.5)
        return await self._pending()

    async def _pending(self) -> set[str]:
        """The runs whose workflows the launch recovers: pending, of this executor and application version."""
        client = DBOSClient(system_database_url=self._url)
        try:
            pending = await client.list_workflows_async(
                status="PENDING",
                name=WORKFLOW,
                app_version=self._config.application_version,
                executor_id=self._config.executor_id,
                load_input=False,
                load_output=False,
            )
        finally:
            client.destroy()
        return {workflow.workflow_id for workflow in pending}

    async def pending_of(self, executor_id: str) -> list[str]:
        """The runs whose workflows the dead process ``executor_id`` left pending (of this application version)."""
        pending = await DBOS.list_workflows_async(
            status="PENDING",
            name=WORKFLOW,
            app_version=self._config.application_version,
            executor_id=executor_id,
            load_input=False,
            load_output=False,
        )
        return [workflow.workflow_id for workflow in pending]

    async def resume(self, run_id: str) -> None:
        """Hand a dead process's pending workflow to DBOS's internal queue: a live process (maybe this one) takes it
        and runs it on its loop, through the run body."""
        await DBOS.resume_workflow_async(run_id)

    async def run(self, run_id: str) -> None:
        """Execute a run as its workflow (a run already recorded returns what it returned)."""
        with SetWorkflowID(run_id):
            await _run_workflow(run_id)

    async def close(self) -> None:
        """Stop DBOS; workflows in flight stay pending and are recovered at the next start. DBOS made its executor
        the loop's default one (``asyncio.to_thread``), and shuts it down: the loop gets a fresh one."""
        global _body
        started = time.monotonic()
        DBOS.destroy()
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
        _body = None
        log.info("durable_runs_stopped", seconds=round(time.monotonic() - started, 3))
