"""Dispatch: where and when a run starts, and how a kill reaches it.

Without durable runs, a run executes in a task of this process (it waits for its place in :mod:`bot.core.run_lanes`).
With them, a run is a DBOS workflow: queued in :mod:`bot.core.run_queues` (any process may take it) or started at
once, and a kill cancels its workflows wherever they execute (DBOS aborts an in-flight model request within about
a second, :mod:`bot.agents.journal`; in this process the run's cancellation token stops it at once).

Every start, wake and kill goes through one supervisor task, so none runs in its caller's context: a run started from
a tool call never inherits the caller's deadline, cancellation or DBOS workflow (a DBOS call made in a workflow's
context would be journaled as one of that workflow's steps).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Literal

import structlog

from bot.core.durable_runs import DurableRuns, current_workflow, run_of
from bot.core.fair_lane import FairLane
from bot.core.run_queues import CHAT, SUBAGENTS, Placement, RunQueues, placement
from bot.records import Run, Session, short_run_id
from storage.repositories import Repositories

log = structlog.get_logger(__name__)
Action = Literal["queue", "wake", "kill"]
Execute = Callable[[str, bool], Awaitable[None]]  # (run id, woken)
_IDLE_POLL = 0.02  # seconds between looks at workflows this process queued, while waiting for them to finish
_FORGET_AT = 1000  # workflows queued here and not started here: then look which ended (taken by other processes)


class RunDispatch:
    def __init__(
        self,
        repos: Repositories,
        lane: FairLane,
        execute: Execute,
        durable: DurableRuns | None,
        queues: RunQueues,
    ) -> None:
        self._repos = repos
        self._lane = lane
        self._execute = execute
        self.durable = durable
        self._queues = queues
        self._actions: asyncio.Queue[tuple[str, Action]] = asyncio.Queue()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._queued: set[str] = set()  # workflows this process queued, not yet started here nor seen ended
        self._forget_at = _FORGET_AT
        self._held: dict[str, tuple[str, ...]] = {}  # run id → the queue its workflow executing here came from
        self._supervisor: asyncio.Task[None] | None = None
        self._placing = asyncio.Lock()

    async def launch(self, body: Execute) -> set[str]:
        """Launch durable runs (if on) with ``body`` as every workflow's; the ids of the runs they resume."""
        if self.durable is None:
            return set()
        return await self.durable.launch(body, self._queues)

    def start(self) -> None:
        self._supervisor = asyncio.create_task(self._supervise(), name="run-dispatch")

    def queue(self, run_id: str) -> None:
        """Start a run that was just persisted as queued."""
        self._actions.put_nowait((run_id, "queue"))

    def wake(self, run_id: str) -> None:
        """Resume a run that settlement moved from waiting back to running."""
        self._actions.put_nowait((run_id, "wake"))

    def kill(self, run_id: str) -> None:
        """Take a killed run out of the lane's queue (the runs behind it move up at once), and cancel its workflows."""
        if self._lane.withdraw(run_id):
            self._tasks[run_id].cancel()
        if self.durable is not None:
            self._actions.put_nowait((run_id, "kill"))

    def abandon(self) -> None:
        """Stop every run task here, leaving the runs as they are: another process declared this one dead (it was
        silent past its lease) and took them over; two executions of one run would make its requests twice."""
        for task in list(self._tasks.values()):
            task.cancel()

    def track(self, run_id: str) -> None:
        """The current task executes ``run_id`` (a workflow DBOS started here): stopped with the others at close; when
        it ends (its outcome recorded), the queue workers here poll at once, for the place it leaves."""
        self._queued.discard(current_workflow() or "")
        task = asyncio.current_task()
        if task is not None and self._tasks.get(run_id) is not task:
            self._tasks[run_id] = task
            task.add_done_callback(functools.partial(self._forget, run_id))
            task.add_done_callback(functools.partial(self._left, run_id))

    def holds(self, run_id: str, queue: str | None) -> None:
        """The workflow executing ``run_id`` here was taken from ``queue`` (``None``: it started at once)."""
        self._held[run_id] = () if queue is None else (queue,)

    def _left(self, run_id: str, task: asyncio.Task[None]) -> None:
        """A workflow ended here: its queue polls now (both of ours when it ended before saying which it was in)."""
        self._queues.wake_after(self._held.pop(run_id, (SUBAGENTS, CHAT)))

    async def lane_places(self) -> dict[str, int]:
        """Run id → place in the sub-agent lane's queue (1 starts next), in the lane's order."""
        order = await self._queues.lane_order() if self.durable is not None else self._lane.order()
        return {run_of(workflow_id): place for place, workflow_id in enumerate(order, start=1)}

    async def wait_idle(self) -> None:
        """Wait until nothing this process started or queued is queued or executing (here, or anywhere)."""
        while True:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
            await self._forget_ended()
            if not self._tasks and self._actions.empty() and not self._queued:
                return
            await asyncio.sleep(_IDLE_POLL if self._queued else 0)

    async def close(self) -> None:
        """Stop the supervisor and every run task; runs still live stay live in the database."""
        if self.durable is not None:  # first: a workflow starting while its siblings are stopped would go on
            self.durable.stop_taking()
        tasks = [t for t in (self._supervisor, *self._tasks.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self._supervisor = None
        if self.durable is not None:
            await self.durable.close()

    async def _supervise(self) -> None:
        while True:
            run_id, action = await self._actions.get()
            if action == "kill":
                assert self.durable is not None
                try:
                    await self.durable.cancel(run_id)
                except Exception:  # its run is killed already; a workflow left running ends at its settled run
                    log.exception("run_workflow_not_cancelled", run_id=run_id)
                continue
            task = asyncio.create_task(self._dispatch(run_id, action == "wake"), name=f"run-{short_run_id(run_id)}")
            self._tasks[run_id] = task
            task.add_done_callback(functools.partial(self._forget, run_id))

    async def _dispatch(self, run_id: str, wake: bool) -> None:
        if self.durable is None:
            await self._execute(run_id, wake)
            return
        async with self._placing:  # queued in the order dispatched: a wake may poll between two enqueues
            found = await self._found(run_id)
            if found is None:
                return
            place = await placement(self._repos, *found, wake=wake)
            if place is not None:
                await self._start(run_id, wake, place)
                return
        await self._start(run_id, wake, None)  # executed here and now, not holding up the dispatches behind it

    async def _found(self, run_id: str) -> tuple[Run, Session] | None:
        run = await self._repos.runs.get(run_id)
        session = await self._repos.sessions.get(run.session_key) if run is not None else None
        return None if run is None or session is None else (run, session)

    async def _start(self, run_id: str, wake: bool, place: Placement | None) -> None:
        assert self.durable is not None
        try:
            queued = await self.durable.start(run_id, wake=wake, place=place)
        except Exception:  # DBOS's database failed us: the next start finds the run not started and starts it
            log.exception("run_not_started", run_id=run_id, wake=wake)
            return
        if queued is not None and self._tasks.get(run_id) is asyncio.current_task():  # else it started here already
            self._queued.add(queued)
            if len(self._queued) >= self._forget_at:  # queued here, taken by other processes (or a backlog)
                await self._forget_ended()
                self._forget_at = max(_FORGET_AT, 2 * len(self._queued))  # a backlog still queued: not every time

    async def _forget_ended(self) -> None:
        """Forget the workflows queued here that have ended (in another process: one started here is forgotten
        as it starts)."""
        queued = set(self._queued)
        self._queued -= queued - await self._queues.unfinished(queued)

    def _forget(self, run_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(run_id) is task:
            del self._tasks[run_id]
