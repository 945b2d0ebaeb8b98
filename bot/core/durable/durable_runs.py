"""Durable runs (``[durability] resume_interrupted``): a run's body is a DBOS workflow whose id is the run id, so a
run cut off by a crash, a kill of the process or a restart resumes at the next start from its last completed step.

A run that waits (on its children, or on a person's decision about a paused tool call) ends its workflow; the wake
that resumes it is a workflow of its own, ``<run id>:wake:<n>`` (n counts the run's wakes). Not one workflow kept
alive across the wait: a wait may last days, and a live workflow would hold its coroutine, its sub-agent lane place and
``wait_idle`` for all that time, while the wait itself is already durable in our tables (status, inbox, approvals).

What the journal holds, in order, per workflow: every model request (``model.request``, :mod:`bot.agents.journal`),
every call of an MCP tool (``tool.<name>``) and every session tool with an effect: ``sessions_spawn``,
``sessions_send``, ``subagents.<action>``, ``model_switch``, and the launch of ``spawn_subagent`` and ``delegate``
(their wait for the child is not a step: a resumed run waits for the child it launched before). Steps that are the
store's own work are journaled in the store instead, in the transaction that does them (``durable.store_steps``):
each turn's starting point (``turn.start``: the run's usage so far and how much of the session's history and of its
own transcript was stored), every take of a run's inbox (``inbox.take``: steers, children's results; an empty take
too) and of its approval decisions (``approvals.take``). Marking a queued run running is no step: a replay finds it
running. Recovery replays those from the journals: a completed model request is not sent again, a completed tool
call not made again, a child not spawned again; a steer, a child's result or a decision taken before the crash
reaches the model again.
A step the crash cut off runs again (at least once): a model request is sent again, an MCP call made again. Tools
without effects (lists, history) are not journaled and run again. Transcript rows and budget spending already stored
are not stored twice (the ``turn.start`` positions tell them apart).

DBOS is one instance per process, launched on the running loop (``setup_hook``): workflows it recovers or takes from
its queues (``durable.run_queues``) run on that loop, next to the database connection they use. At launch a
process recovers only the workflows of its own ``executor_id`` and ``application_version``; the start-up leaves
their runs live, the runs whose workflows are queued or executing elsewhere, and the runs waiting on them
(``durable.live_at_start``). A dead process's workflows are handed on by the janitor (``durable.executors``,
through ``pending_of`` and ``resume``: back to their queue, which any live process takes from). A run committed as
queued or woken whose workflow was never started (the crash came between the commit and the start) is started
again; a live run whose workflow nobody recovers (another version) is settled ``interrupted`` as before.

A kill cancels the run's workflows (:meth:`DurableRuns.cancel`) in whichever process they are queued or executing;
the model request in flight is a preemptible step, which DBOS aborts when it sees the cancellation.

The system database follows the store: with PostgreSQL the same database (DBOS's tables in its ``dbos`` schema), so
processes on several machines share it; with SQLite a file next to the store's (processes on one host share it).
``[durability] system_database`` (a path, or a ``postgresql://`` url) overrides both.

A workflow is replayed step by step, each recorded result matched to the step of the same number: a deploy that
changes which steps a run takes, or their order, must change ``application_version``. DBOS's version is that and
:data:`JOURNAL_LAYOUT`, which this code raises when it changes its own steps. A process of a new version does not
recover the old version's in-flight runs (and wakes): its start-up settles them ``interrupted`` (announced
once, as without durable runs). Replaying them into the new steps would hand recorded results to the wrong steps.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

import sqlalchemy.exc
import structlog
from dbos import DBOS, DBOSClient, DBOSConfig, SetWorkflowID, WorkflowStatus
from dbos._error import DBOSException  # not re-exported by dbos

from bot.agents.journal import in_workflow
from bot.config import DurabilityConfig, StorageConfig
from bot.core.durable import journal_store, store_steps
from bot.core.durable.run_queues import APPLICATION, UNFINISHED, Placement, RunQueues

log = structlog.get_logger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
RunBody = Callable[[str, bool], Awaitable[None]]  # (run id, woken)
_SCHEMA_WAITS = 20  # half-seconds a start waits for another process creating DBOS's tables
WORKFLOW = "threadbound.run"
WAKE_WORKFLOW = "threadbound.wake"
NAMES = [WORKFLOW, WAKE_WORKFLOW]
JOURNAL_LAYOUT = 4  # 4: no inbox take after an answer that calls no tool
WAKE = ":wake:"  # a wake's workflow id: <run id>:wake:<n>, n counting the run's wakes from 1

_body: RunBody | None = None  # DBOS is one instance per process: the launched executor's run body
_home: asyncio.AbstractEventLoop | None = None  # and the loop it was launched on, where run bodies belong


async def _closing(run_id: str, woken: bool) -> None:
    """The body of a workflow DBOS hands this process while it closes: it ends at once, unfinished (cancelled, not
    failed), so the workflow stays pending and resumes at the next start."""
    raise asyncio.CancelledError


def _body_here() -> RunBody:
    """The run body for a workflow starting now. DBOS starts a workflow taken from its queue on the loop it was
    launched on only while that loop runs; otherwise (the loop stopped, on the way out) on a loop of its own, where the
    run's connections and tasks do not belong: such a workflow is left pending, like one handed over while closing."""
    assert _body is not None, "a run workflow started before DBOS was launched"
    return _body if asyncio.get_running_loop() is _home else _closing


@DBOS.workflow(name=WORKFLOW)
async def _run_workflow(run_id: str) -> None:
    await _body_here()(run_id, False)


@DBOS.workflow(name=WAKE_WORKFLOW)
async def _wake_workflow(run_id: str) -> None:
    await _body_here()(run_id, True)


def run_of(workflow_id: str) -> str:
    """The run a workflow is (its own) or wakes."""
    return workflow_id.split(WAKE)[0]


async def step(name: str, fn: Callable[P, Coroutine[Any, Any, R]], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn`` as a DBOS step in a run's workflow, else a plain call.

    On recovery the step's recorded result comes back instead of a second call."""
    if not in_workflow():
        return await fn(*args, **kwargs)
    return await DBOS.run_step_async({"name": name}, fn, *args, **kwargs)


def current_workflow() -> str | None:
    """The id of the workflow whose code (or step) runs now, if any."""
    return DBOS.workflow_id


class DurableRuns:
    def __init__(self, config: DurabilityConfig, storage: StorageConfig, *, traced: bool = False) -> None:
        """``traced``: DBOS's own spans too (workflows, steps), through the process's global tracer provider."""
        self._config = config
        self._traced = traced
        self._url = journal_store.url(config, storage)
        self._queues: RunQueues | None = None

    @property
    def version(self) -> str:
        """DBOS's application version: the configured one, and the layout of this code's journal."""
        return f"{self._config.application_version}+journal{JOURNAL_LAYOUT}"

    async def launch(self, body: RunBody, queues: RunQueues) -> set[str]:
        """Launch DBOS on the running loop, with ``body`` as every run's workflow.

        ``queues`` are declared first. Returns the ids of the runs it leaves live: their workflows are recovered here,
        or queued for any process."""
        global _body, _home
        recovering = await self._prepare_journal(queues)
        _body, _home = body, asyncio.get_running_loop()
        config: DBOSConfig = {
            "name": APPLICATION,
            "system_database_url": self._url,
            "application_version": self.version,
            "executor_id": self._config.executor_id,
            "notification_listener_polling_interval_sec": journal_store.NOTICE_POLL_SECONDS,
            "max_executor_threads": journal_store.executor_threads(self._url),
            "log_level": "WARNING",  # its info lines (a line per schema migration) say less than durable_runs_launched
            "enable_otlp": self._traced,  # no endpoints of its own: its spans go where the bot's do (bot/tracing.py)
        }
        DBOS(config=config)
        queues.listen()
        DBOS.launch()
        await queues.attach()
        self._queues = queues
        log.info("durable_runs_launched", recovering=len(recovering), executor_id=self._config.executor_id)
        return recovering

    async def _prepare_journal(self, queues: RunQueues) -> set[str]:
        """Before the launch: create or migrate DBOS's tables, declare the queues (so the launch's queue workers poll
        them from the start), and read which runs have a workflow pending or queued. Processes starting together on
        a new PostgreSQL store try again while another one migrates."""
        for attempt in range(_SCHEMA_WAITS):
            try:
                await journal_store.migrate(self._url)
                client = DBOSClient(system_database_url=self._url, application_name=APPLICATION)
                try:
                    await queues.register(client)
                    return await self.unfinished_runs(client)
                finally:
                    client.destroy()
            except (sqlalchemy.exc.DBAPIError, DBOSException) as error:
                if attempt == _SCHEMA_WAITS - 1:
                    raise
                log.info("durable_journal_being_migrated", error=type(error).__name__)
                await asyncio.sleep(0.5)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def pending_of(self, executor_id: str) -> list[tuple[str, str | None]]:
        """The workflows the dead process ``executor_id`` left pending, with the queue each came from.

        Runs' and wakes' workflows both count, of this app version."""
        return [(w.workflow_id, w.queue_name) for w in await self._workflows(DBOS, "PENDING", executor_id)]

    async def unfinished_runs(self, source: type[DBOS] | DBOSClient = DBOS) -> set[str]:
        """The runs with a workflow queued or executing, in any process.

        A run's own workflow and its wakes' count, of this application version."""
        return {run_of(workflow.workflow_id) for workflow in await self._workflows(source, UNFINISHED)}

    async def statuses(self, run_id: str) -> list[str]:
        """The statuses of every workflow of a run: its own and its wakes'.

        Workflows of any application version count."""
        found = await DBOS.list_workflows_async(
            workflow_id_prefix=run_id, name=NAMES, load_input=False, load_output=False
        )
        return [workflow.status for workflow in found]

    async def _workflows(
        self, source: type[DBOS] | DBOSClient, status: str | list[str], executor_id: str | None = None
    ) -> list[WorkflowStatus]:
        """Runs' and wakes' workflows of this application version in ``status`` (of ``executor_id``, if given)."""
        return await source.list_workflows_async(
            status=status,
            name=NAMES,
            app_version=self.version,
            executor_id=executor_id,
            load_input=False,
            load_output=False,
        )

    async def resume(self, workflow_id: str, queue: str | None) -> None:
        """Hand a dead process's pending workflow back to its queue (one started at once: DBOS's internal queue): a
        live process (maybe this one) takes it and runs it on its loop, through the run body. Back in its own queue,
        it counts against that queue's limits again (a dead process's workflow holds its place until then)."""
        await DBOS.resume_workflow_async(workflow_id, queue_name=queue)

    async def prune(self, cutoff: float, limit: int) -> Counter[str]:
        """Delete up to ``limit`` workflows that ended before ``cutoff`` (epoch seconds), with their steps: a run's
        workflow that ended is never replayed (a run executes only while it is live), and DBOS keeps it for ever."""
        ended = await DBOS.list_workflows_async(
            status=["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"],
            completed_before=datetime.fromtimestamp(cutoff, UTC).isoformat(),
            name=NAMES,
            limit=limit,
            load_input=False,
            load_output=False,
        )
        if ended:
            await DBOS.delete_workflows_async([workflow.workflow_id for workflow in ended])
        return Counter({"journal_workflows": len(ended)})

    async def start(self, run_id: str, *, wake: bool, place: Placement | None) -> str | None:
        """Queue a run's workflow (or, woken, its next wake's) where ``place`` says; with no place, execute it here and
        now. The id of the workflow queued, if one was."""
        workflow, workflow_id = (_wake_workflow, await self._next_wake(run_id)) if wake else (_run_workflow, run_id)
        if place is not None:
            assert self._queues is not None, "a run queued before DBOS was launched"
            await self._queues.enqueue(workflow_id, place, workflow, run_id)
            return workflow_id
        store_steps.starting_new()  # a run's own id or its next wake's: no execution of it came before
        with SetWorkflowID(workflow_id):
            await workflow(run_id)
        return None

    async def _next_wake(self, run_id: str) -> str:
        """The next wake's number: one more than the highest recorded.

        A run's wakes come one after another: only a waiting run is woken, and a wake ends when the run waits again.
        Retention deletes the oldest first, so a number is never used again while its workflow exists."""
        wakes = await DBOS.list_workflows_async(
            workflow_id_prefix=f"{run_id}{WAKE}", name=WAKE_WORKFLOW, load_input=False, load_output=False
        )
        last = max((int(wake.workflow_id.rsplit(WAKE, 1)[1]) for wake in wakes), default=0)
        return f"{run_id}{WAKE}{last + 1}"

    async def cancel(self, run_id: str) -> None:
        """Cancel a killed run's workflows still queued or executing, in whichever process: a queued one never
        starts, an executing one stops at its next step (an in-flight model request within about a second)."""
        live = await DBOS.list_workflows_async(
            workflow_id_prefix=run_id, status=UNFINISHED, name=NAMES, load_input=False, load_output=False
        )
        for workflow in live:
            await DBOS.cancel_workflow_async(workflow.workflow_id)

    def stop_taking(self) -> None:
        """Start no more run bodies here: a workflow DBOS hands over from now on is left pending (:func:`_closing`)."""
        global _body
        _body = _closing

    async def close(self) -> None:
        """Stop DBOS; workflows in flight stay pending and are recovered at the next start (one DBOS hands over
        meanwhile is left pending too, :meth:`stop_taking`)."""
        started = time.monotonic()
        self.stop_taking()
        if self._queues is not None:
            self._queues.stop_listening()
        await journal_store.destroy()
        log.info("durable_runs_stopped", seconds=round(time.monotonic() - started, 3))
