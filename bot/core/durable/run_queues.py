"""The DBOS queues durable runs wait in, shared by every process on the store: a run one process queues starts in
whichever process's queue worker takes it first (its executor then owns it).

- ``threadbound-chat``, main-agent turns: partitioned by session, one at a time per session, whichever process
  takes them, in the order they were asked: a turn's priority is its number in the session (DBOS orders a partition
  by priority, then by its own enqueue time, which on SQLite under Python 3.11 counts whole seconds).
- ``threadbound-subagents``: sub-agent runs no longer wait here but in line for a place in our tables
  (``durable.lane_places``); it is still declared, with the lane's limits, so runs an earlier version queued in it
  are taken. Order: priority (1 + how many lane runs the member had queued or running before), then age.

Started at once, not queued: a delegated child (``spawn_subagent``, ``delegate``: it runs inside its caller's turn,
which holds the caller's place) and a main-agent turn woken after an approval (a later turn of its session may hold
the session's place, waiting for this one to end). DBOS polls its queues every ``[durability] queue_poll_seconds``;
this process wakes its own workers (:mod:`bot.core.durable.queue_wakes`) when it queues a run and when a workflow of its
ends, so a queued run starts at once when there is room here, and within a poll when the room is in another process.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from dbos import DBOS, DBOSClient, Queue, SetEnqueueOptions, SetWorkflowID

from bot.config import SubagentDefaults
from bot.core.durable import queue_wakes
from bot.core.durable.queue_wakes import QueueWakes
from bot.records import Run, RunKind, Session
from storage.repositories import Repositories

APPLICATION = "threadbound"  # DBOS's name for the application, which owns the queues
SUBAGENTS = "threadbound-subagents"
CHAT = "threadbound-chat"
UNFINISHED = ["ENQUEUED", "PENDING"]


@dataclass(frozen=True)
class Placement:
    queue: str
    partition: str | None = None
    priority: int | None = None


def queue_of(run: Run, session: Session, *, wake: bool) -> str | None:
    """The queue a run's workflow (or its wake's) comes from; ``None``: it starts at once."""
    if session.delegation is not None or (run.kind is RunKind.CHAT and wake):
        return None
    return CHAT if run.kind is RunKind.CHAT else SUBAGENTS


async def placement(repos: Repositories, run: Run, session: Session, *, wake: bool) -> Placement | None:
    """Where in its queue a run (or its wake) waits; ``None``: it starts at once."""
    queue = queue_of(run, session, wake=wake)
    if queue == CHAT:
        turn = 1 + await repos.runs.count_before(session.key, run.created_at)
        return Placement(CHAT, partition=session.key, priority=turn)
    return None  # a sub-agent lane run waits in line for a place instead (durable.lane_places)


class RunQueues:
    def __init__(self, lane: SubagentDefaults, poll_seconds: float) -> None:
        self._lane = lane
        self._poll_seconds = poll_seconds
        self._queues: dict[str, Queue] = {}
        self._wakes = QueueWakes()

    async def register(self, client: DBOSClient) -> None:
        """Declare both queues in DBOS's tables before the launch.

        DBOS's queue workers then poll them from their first round, not a second later. The last process started sets
        their limits."""
        await client.register_queue_async(
            SUBAGENTS,
            global_concurrency=self._lane.max_concurrent,
            worker_concurrency=self._lane.max_concurrent_per_process,
            polling_interval_sec=self._poll_seconds,
            application_name=APPLICATION,
        )
        await client.register_queue_async(
            CHAT, partition_concurrency=1, polling_interval_sec=self._poll_seconds, application_name=APPLICATION
        )

    def listen(self) -> None:
        """Right before DBOS's launch: its queue workers poll when this process wakes them, as well as at their
        interval."""
        self._wakes = QueueWakes()
        queue_wakes.listen(self._wakes, self._poll_seconds)

    def wake_after(self, held: tuple[str, ...]) -> None:
        """Poll the queues a workflow that ended here held a place in: the place may be another run's now."""
        self._wakes.wake(*held)

    def stop_listening(self) -> None:
        """Before DBOS's stop: the queue workers end their wait and stop."""
        self._wakes.close()

    async def attach(self) -> None:
        """Once DBOS is launched: the queues to enqueue on."""
        for name in (SUBAGENTS, CHAT):
            queue = await DBOS.retrieve_queue_async(name)
            assert queue is not None, f"queue {name} was declared before the launch"
            self._queues[name] = queue

    async def enqueue(
        self,
        workflow_id: str,
        place: Placement,
        workflow: Callable[[str], Coroutine[Any, Any, None]],
        run_id: str,
    ) -> None:
        options = SetEnqueueOptions(queue_partition_key=place.partition, priority=place.priority)
        with SetWorkflowID(workflow_id), options:
            await self._queues[place.queue].enqueue_async(workflow, run_id)
        self._wakes.wake(place.queue)

    @staticmethod
    async def unfinished(workflow_ids: set[str]) -> set[str]:
        """Those of ``workflow_ids`` still queued or executing (anywhere)."""
        if not workflow_ids:
            return set()
        found = await DBOS.list_workflows_async(
            workflow_ids=list(workflow_ids), status=UNFINISHED, load_input=False, load_output=False
        )
        return {workflow.workflow_id for workflow in found}
