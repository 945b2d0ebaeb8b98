"""Durable runs (``[durability] resume_interrupted``): a run's body is a DBOS workflow whose id is the run id, so a
run cut off by a crash, a kill of the process or a restart resumes at the next start from its last completed step.

A run that waits (on its children, or on a person's decision about a paused tool call) ends its workflow; the wake
that resumes it is a workflow of its own, ``<run id>:wake:<n>`` (n counts the run's wakes). Not one workflow kept
alive across the wait: a wait may last days, and a live workflow would hold its coroutine, its sub-agent lane slot and
``wait_idle`` for all that time, while the wait itself is already durable in our tables (status, inbox, approvals).

What the journal holds, in order, per workflow: the run taken from the queue (``run.start``; a wake has none), each
turn's starting point (``turn.start``: the run's usage so far and how much of the session's history and of its own
transcript was stored), every model request (``model.request``, :mod:`bot.agents.journal`), every take of a run's
inbox (``inbox.take``: steers, children's results) and of its approval decisions (``approvals.take``), every call of
an MCP tool (``tool.<name>``) and every session tool with an effect: ``sessions_spawn``, ``sessions_send``,
``subagents.<action>``, ``model_switch``, and the launch of ``spawn_subagent`` and ``delegate`` (their wait for the
child is not a step: a resumed run waits for the child it launched before). Recovery replays those from the journal:
a completed model request is not sent again, a completed tool call not made again, a child not spawned again; a steer,
a child's result or a decision taken before the crash reaches the model again (a take tags the rows it takes with its
step, :func:`step_key`, so a take cut off before its result was recorded takes the same rows when it runs again).
A step the crash cut off runs again (at least once): a model request is sent again, an MCP call made again. Tools
without effects (lists, history) are not journaled and run again. Transcript rows and budget spending already stored
are not stored twice (the ``turn.start`` positions tell them apart).

DBOS is one instance per process, launched on the running loop (``setup_hook``): workflows it recovers run on that
loop, next to the database connection they use. A process recovers only the workflows of its own ``executor_id``
and ``application_version``; the start-up leaves their runs live, and the runs waiting on them
(:mod:`bot.core.live_at_start`). A live run whose workflow it does not recover (another version, none at all: a wake
the crash cut off between the commit that woke the run and the start of its workflow) is settled ``interrupted`` as
before. A workflow is replayed step by step, each recorded result matched to the step of the same number: a deploy
that changes which steps a run takes, or their order, must change ``application_version``. A process of the new
version does not recover the old version's in-flight runs (and wakes): its start-up settles them ``interrupted``
(announced once, as without durable runs). Replaying them into the new steps would hand recorded results to the wrong
steps.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import structlog
from dbos import DBOS, DBOSClient, DBOSConfig, SetWorkflowID

from bot.agents.journal import in_workflow
from bot.config import DurabilityConfig

log = structlog.get_logger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
RunBody = Callable[[str, bool], Awaitable[None]]  # (run id, woken)
WORKFLOW = "threadbound.run"
WAKE_WORKFLOW = "threadbound.wake"
WAKE = ":wake:"  # a wake's workflow id: <run id>:wake:<n>, n counting the run's wakes from 1

_body: RunBody | None = None  # DBOS is one instance per process: the launched executor's run body


@DBOS.workflow(name=WORKFLOW)
async def _run_workflow(run_id: str) -> None:
    assert _body is not None, "a run workflow started before DBOS was launched"
    await _body(run_id, False)


@DBOS.workflow(name=WAKE_WORKFLOW)
async def _wake_workflow(run_id: str) -> None:
    assert _body is not None, "a wake workflow started before DBOS was launched"
    await _body(run_id, True)


async def step(name: str, fn: Callable[P, Coroutine[Any, Any, R]], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn`` as a DBOS step in a run's workflow (on recovery its recorded result comes back), else a plain call."""
    if not in_workflow():
        return await fn(*args, **kwargs)
    return await DBOS.run_step_async({"name": name}, fn, *args, **kwargs)


def step_key() -> str | None:
    """Inside a step, its place in its workflow (``<workflow id>#<step number>``), the same when a recovered workflow
    runs the step again: rows a step takes are tagged with it, so a step cut off before its result was recorded
    takes the same rows again. ``None`` outside any step."""
    if DBOS.workflow_id is None or DBOS.step_id is None:
        return None
    return f"{DBOS.workflow_id}#{DBOS.step_id}"


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


class DurableRuns:
    def __init__(self, config: DurabilityConfig, storage_path: str) -> None:
        self._config = config
        self._path = Path(config.system_database or f"{storage_path}.dbos").resolve()

    @property
    def _url(self) -> str:
        return f"sqlite:///{self._path}"

    async def launch(self, body: RunBody) -> set[str]:
        """Launch DBOS on the running loop, with ``body`` as every run's workflow; the ids of the runs whose
        workflows it recovers (they start once ``body`` lets them)."""
        global _body
        recovering = await self._pending() if await asyncio.to_thread(_prepare, self._path) else set()
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

    async def _pending(self) -> set[str]:
        """The runs whose workflows (a run's own, or one of its wakes') the launch recovers: pending, of this executor
        and application version."""
        client = DBOSClient(system_database_url=self._url)
        try:
            pending = await client.list_workflows_async(
                status="PENDING",
                name=[WORKFLOW, WAKE_WORKFLOW],
                app_version=self._config.application_version,
                executor_id=self._config.executor_id,
                load_input=False,
                load_output=False,
            )
        finally:
            client.destroy()
        return {workflow.workflow_id.split(WAKE)[0] for workflow in pending}

    async def run(self, run_id: str, *, wake: bool) -> None:
        """Execute a run as its workflow (a run already recorded returns what it returned); or, woken, its next turns
        as the workflow of this wake. A run's wakes come one after another (only a waiting run is woken, and a wake
        ends when the run waits again), so the next wake's number is the count of its wakes so far plus one."""
        if not wake:
            with SetWorkflowID(run_id):
                await _run_workflow(run_id)
            return
        wakes = await DBOS.list_workflows_async(
            workflow_id_prefix=f"{run_id}{WAKE}", name=WAKE_WORKFLOW, load_input=False, load_output=False
        )
        with SetWorkflowID(f"{run_id}{WAKE}{len(wakes) + 1}"):
            await _wake_workflow(run_id)

    async def close(self) -> None:
        """Stop DBOS; workflows in flight stay pending and are recovered at the next start. DBOS made its executor
        the loop's default one (``asyncio.to_thread``), and shuts it down: the loop gets a fresh one."""
        global _body
        started = time.monotonic()
        DBOS.destroy()
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
        _body = None
        log.info("durable_runs_stopped", seconds=round(time.monotonic() - started, 3))
