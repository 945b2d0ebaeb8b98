"""Dispatch: where and when a run starts, and how a kill reaches it.

Dispatch is the engine's :class:`~bot.core.runs.ports.Launcher`. Without durable runs, a run executes in a task
of this process (a lane run's task starts once it holds its slot: ``durable.waiting_here``).
With them, a run is a DBOS workflow: a sub-agent lane run starts once it holds a place (``durable.lane_places``: at
once when one is free as it is stored, else when one is handed to it; a bounded number of workflows start at once,
``durable.starts``), a main-agent turn is queued in
``durable.run_queues`` (any process may take it), and a kill cancels a run's workflows wherever they execute (DBOS
aborts an in-flight model request within about a second, :mod:`bot.agents.journal`; in this process the run's
cancellation token stops it at once).

Every kill, wake and run to place goes through one supervisor task, and a run's task begins in a copy of the start's
context, so none runs in its caller's: a run started from a tool call, or from the room another's workflow made, never
inherits its deadline, cancellation or DBOS workflow (a DBOS call made in a workflow's context is its step).
Runs are placed (in a queue or a lane) by one task, one after another in the order dispatched: a run waiting to be
placed is an entry in a deque, not a task of its own. A task each would turn a burst of spawns into as many tasks
waiting on a lock, all walked by every full garbage collection.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections import deque
from collections.abc import Coroutine
from typing import Literal

import structlog

from bot.core.durable import store_steps
from bot.core.durable.durable_runs import DurableRuns, current_workflow
from bot.core.durable.lane_places import LanePlaces
from bot.core.durable.run_queues import CHAT, SUBAGENTS, Placement, RunQueues, placement, queue_of
from bot.core.durable.starts import Starts
from bot.core.durable.waiting_here import WaitingHere, found_run, in_lane
from bot.core.runs.fair_lane import FairLane
from bot.core.runs.ports import RunBody
from bot.records import Run, RunStatus, Session, short_run_id
from storage.db import Connection
from storage.repositories import Repositories

log = structlog.get_logger(__name__)
Action = Literal["queue", "placed", "wake", "kill"]  # placed: queued holding a lane place here
_IDLE_POLL = 0.02  # seconds between looks at workflows this process queued, while waiting for them to finish
_FORGET_AT = 1000  # workflows queued here and not started here: then look which ended (taken by other processes)


class RunDispatch:
    def __init__(
        self,
        repos: Repositories,
        lane: FairLane,
        durable: DurableRuns | None,
        queues: RunQueues,
        places: LanePlaces,
    ) -> None:
        self._repos = repos
        self._lane = lane
        self._execute: RunBody | None = None  # the engine's, from launch()
        self.durable_runs = durable
        self._queues = queues
        self._places = places  # durable runs' places in the sub-agent lane
        self._starts = Starts(
            places, lambda run_id, woken: self._run_task(run_id, self._start(run_id, woken, None))
        )  # lane runs holding a place here
        self._handing_out: asyncio.Task[None] | None = None
        self._actions: asyncio.Queue[tuple[str, Action]] = asyncio.Queue()
        self._tasks: dict[str, asyncio.Task[object]] = {}
        self._held: dict[str, tuple[str, ...]] = {}  # run id → the queue its workflow executing here came from
        self._queued: set[str] = set()  # workflows this process queued, not yet started here nor seen ended
        self._forget_at = _FORGET_AT
        self._supervisor: asyncio.Task[None] | None = None
        self._to_place: deque[tuple[str, Action]] = deque()  # runs dispatched, not yet placed
        self._placer: asyncio.Task[None] | None = None
        self._placing: str | None = None  # the run being placed now
        self._started_while_placed = False  # its workflow started here before its placing returned
        self._started = asyncio.Event()  # recovered workflows wait for the start
        self._context: contextvars.Context | None = None  # the start's: every run's task begins in a copy
        self._here = WaitingHere(repos, lane, self._run_here)  # durable runs off

    @property
    def durable(self) -> bool:
        return self.durable_runs is not None

    async def launch(self, execute: RunBody) -> set[str]:
        """Take ``execute`` as every run's body and launch durable runs (if on); the runs their workflows resume."""
        self._execute = execute
        if self.durable_runs is None:
            return set()
        return await self.durable_runs.launch(self._resume, self._queues)

    def start(self) -> None:
        self._context = contextvars.copy_context()
        self._supervisor = asyncio.create_task(self._supervise(), name="run-dispatch")
        if self.durable_runs is not None:
            self._handing_out = asyncio.create_task(self._starts.hand_out(), name="lane-places")
        self._started.set()

    async def _resume(self, run_id: str, wake: bool) -> None:
        """A run's or a wake's workflow body: started or taken from a queue here, or recovered by DBOS."""
        assert self._execute is not None, "launch() before any workflow starts"
        store_steps.begin()
        self.track(run_id)
        await self._started.wait()
        found = await self._found(run_id)
        self._starts.begun(run_id, holding=found is not None and self._places.held_here(found[0]))
        if found is None:
            return
        run, session = found
        queue = queue_of(run, session, wake=wake)  # where this workflow came from (None: it started at once)
        self._held[run.id] = (queue,) if queue == CHAT else ()  # a lane run came with its place, from no queue
        await self._execute(run, session, wake, True)

    def _run_here(self, run_id: str, wake: bool, found: tuple[Run, Session] | None) -> asyncio.Task[object]:
        return self._run_task(run_id, self._execute_here(run_id, wake, found))

    async def _execute_here(self, run_id: str, wake: bool, found: tuple[Run, Session] | None) -> None:
        """A run's body in a task of this process (durable runs off); ``found``: its run and session, else read now."""
        assert self._execute is not None, "launch() before start()"
        found = found or await self._found(run_id)
        if found is not None:
            await self._execute(*found, wake, False)

    async def place(self, tx: Connection, run: Run, *, delegated: bool) -> bool:
        """In the transaction storing a queued run (durable runs): a lane run joins the line, with a place if it is
        first and one is free (then True); holding one, it starts at once."""
        return self.durable_runs is not None and await self._places.join(tx, run, delegated=delegated)

    def queue(self, run_id: str, *, placed: bool = False) -> None:
        """Start a run that was just persisted as queued (``placed``: holding a lane place, it needs no placing)."""
        if placed and self._context is not None:  # started: its task begins in the start's context, not the caller's
            self._starts.add(run_id, False)
        else:
            self._actions.put_nowait((run_id, "placed" if placed else "queue"))

    def wake(self, run_id: str) -> None:
        """Resume a run that settlement moved from waiting back to running."""
        self._actions.put_nowait((run_id, "wake"))

    def kill(self, run_id: str) -> None:
        """Take a killed run out of the lane's queue, and cancel its workflows.

        The runs behind it move up at once."""
        self._lane.withdraw(run_id)  # waiting, it has no task yet
        if self.durable_runs is not None:
            self._actions.put_nowait((run_id, "kill"))
            self._starts.look()  # it may have held a place, its workflow not started yet

    def abandon(self) -> None:
        """Stop every run task here, leaving the runs as they are: another process declared this one dead (it was
        silent past its lease) and took them over; two executions of one run would make its requests twice."""
        self._to_place.clear()
        self._starts.clear()
        self._lane.clear()  # first: no run left is handed a slot as the tasks stop
        for task in [*self._tasks.values(), *self._placers()]:
            task.cancel()

    def track(self, run_id: str) -> None:
        """The current task executes ``run_id`` (a workflow DBOS started here): stopped with the others at close; when
        it ends (its outcome recorded), the queue workers here poll at once, for the place it leaves."""
        self._queued.discard(current_workflow() or "")
        self._started_while_placed |= run_id == self._placing
        task = asyncio.current_task()
        if task is not None and self._tasks.get(run_id) is not task:
            self._tasks[run_id] = task
            task.add_done_callback(functools.partial(self._forget, run_id))
            task.add_done_callback(functools.partial(self._left, run_id))

    def _left(self, run_id: str, task: asyncio.Task[object]) -> None:
        """A workflow ended here: its queue polls now (both of ours when it ended before saying which it was in), and
        the lane's free places are handed out."""
        self._queues.wake_after(self._held.pop(run_id, (SUBAGENTS, CHAT)))
        self._starts.ended(run_id)

    async def lane_places(self) -> dict[str, int]:
        """Run id → place in the sub-agent lane's queue, in the lane's order.

        Place 1 starts next."""
        order = await self._places.line() if self.durable_runs is not None else self._lane.order()
        return {run_id: place for place, run_id in enumerate(order, start=1)}

    async def wait_idle(self) -> None:
        """Wait until nothing this process started or queued waits or executes, anywhere."""
        while True:
            await asyncio.gather(*self._tasks.values(), *self._placers(), return_exceptions=True)
            await self._forget_ended()
            waiting = self.durable_runs is not None and await self._repos.lane_places.anyone_waiting()
            waiting = waiting or self._lane.waiting or self._starts.pending
            if not self._tasks and self._actions.empty() and not self._queued and not self._placers() and not waiting:
                return
            await asyncio.sleep(_IDLE_POLL if self._queued or waiting else 0)

    async def close(self) -> None:
        """Stop the supervisor and every run task; runs still live stay live in the database. A task that ends in an
        error as it is stopped does not stop the close: DBOS's execution of a killed run, parked over the cancellation,
        can end so ("awaited workflow was cancelled"), and the rest of the bot must close all the same."""
        if self.durable_runs is not None:  # first: a workflow starting while its siblings are stopped would go on
            self.durable_runs.stop_taking()
        self._lane.clear()  # first: no run left is handed a slot as the tasks stop
        tasks = [t for t in (self._supervisor, self._placer, self._handing_out, *self._tasks.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task, outcome in zip(tasks, await asyncio.gather(*tasks, return_exceptions=True), strict=True):
            if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
                log.warning("task_failed_while_stopping", task=task.get_name(), exc_info=outcome)
        self._tasks.clear()
        self._supervisor = self._placer = self._handing_out = self._context = None
        if self.durable_runs is not None:
            await self.durable_runs.close()

    async def _supervise(self) -> None:
        while True:
            run_id, action = await self._actions.get()
            if action == "kill":
                assert self.durable_runs is not None
                try:
                    await self.durable_runs.cancel(run_id)
                except Exception:  # its run is killed already; a workflow left running ends at its settled run
                    log.exception("run_workflow_not_cancelled", run_id=run_id)
                continue
            self._to_place.append((run_id, action))
            if not self._placers():
                self._placer = asyncio.create_task(self._place_all(), name="run-placing")

    def _run_task(self, run_id: str, body: Coroutine[object, object, object]) -> asyncio.Task[object]:
        context = None if self._context is None else self._context.copy()  # each its own: tasks set context vars
        task = asyncio.create_task(body, name=f"run-{short_run_id(run_id)}", context=context)
        self._tasks[run_id] = task
        task.add_done_callback(functools.partial(self._forget, run_id))
        task.add_done_callback(lambda _: self._starts.ended(run_id))  # it may have held a place
        return task

    def _placers(self) -> list[asyncio.Task[None]]:
        return [self._placer] if self._placer is not None and not self._placer.done() else []

    async def _place_all(self) -> None:
        """Place the runs dispatched, in that order (a wake may poll between two enqueues); one that starts at once
        executes in a task of its own, not holding up the ones behind it."""
        while self._to_place:
            run_id, action = self._to_place.popleft()
            wake = action == "wake"
            if action == "placed":  # stored holding a place: no other start can have taken it
                self._starts.add(run_id, False)
                continue
            if self.durable_runs is None:
                await self._here.place(run_id, wake)
                continue
            try:
                found = await self._found(run_id)
                if found is None or found[0].status is not (RunStatus.RUNNING if wake else RunStatus.QUEUED):
                    continue  # ended, or started already
                lane = in_lane(found)
                place = None if lane else await placement(self._repos, *found, wake=wake)
            except Exception:  # the store failed us: the next start finds the run not started and starts it
                log.exception("run_not_started", run_id=run_id, wake=wake)
                continue
            if lane:  # it starts once it holds a place: now if it came with one (or died unstarted holding one)
                if found[0].lane_place is None:
                    self._starts.look()
                elif self._places.held_here(found[0]) and run_id not in self._tasks and run_id not in self._starts:
                    self._starts.add(run_id, wake)  # else handed out and started already
                continue
            if place is None:
                self._run_task(run_id, self._start(run_id, wake, None))
                continue
            self._placing, self._started_while_placed = run_id, False
            queued = await self._start(run_id, wake, place)
            self._placing = None
            if queued is not None and not self._started_while_placed:  # else it started here already
                self._queued.add(queued)
                if len(self._queued) >= self._forget_at:  # queued here, taken by other processes (or a backlog)
                    await self._forget_ended()
                    self._forget_at = max(_FORGET_AT, 2 * len(self._queued))  # a backlog still queued: not every time

    async def _found(self, run_id: str) -> tuple[Run, Session] | None:
        return await found_run(self._repos, run_id)

    async def _start(self, run_id: str, wake: bool, place: Placement | None) -> str | None:
        """Queue a run or its wake where ``place`` says, or execute it here.

        Returns the workflow queued, if one was; none, too, when DBOS failed (that is logged)."""
        assert self.durable_runs is not None
        try:
            return await self.durable_runs.start(run_id, wake=wake, place=place)
        except Exception:  # DBOS's database failed us (its pool ran dry, say): dispatched again in a while
            log.exception("run_not_started", run_id=run_id, wake=wake)
            again: tuple[str, Action] = (run_id, "wake" if wake else "queue")
            asyncio.get_running_loop().call_later(self._places.look_again_seconds, self._actions.put_nowait, again)
            return None

    async def _forget_ended(self) -> None:
        """Forget the workflows queued here that have ended (in another process: one started here is forgotten
        as it starts)."""
        queued = set(self._queued)
        self._queued -= queued - await self._queues.unfinished(queued)

    def _forget(self, run_id: str, task: asyncio.Task[object]) -> None:
        if self._tasks.get(run_id) is task:
            del self._tasks[run_id]
