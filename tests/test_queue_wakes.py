"""A durable run queued here starts without waiting for DBOS's next poll of its queue, and a run that ends here lets
the next one in the lane start at once: with polls 10 s apart, every start below comes within seconds. Closing stops
the queue workers in their sleep (DBOS's own stop waits for them to wake)."""

from __future__ import annotations

import inspect
import threading
import time
from dataclasses import replace

import dbos._dbos as dbos_registry
import dbos._queue as dbos_queue
from dbos import Queue

from bot.core.durable import queue_wakes
from bot.core.durable.queue_wakes import QueueWakes
from bot.core.runs.requests import ChatRequest
from bot.records import RunStatus
from tests.core_support import ORIGIN, ScriptedModels, running_core, settle
from tests.polling import eventually
from tests.test_fairness import Work, spawn

CONFIG = """
[durability]
queue_poll_seconds = 10
[agents.defaults]
model = "test/work"
[agents.defaults.subagents]
max_concurrent = 1
[agents.list.main]
"""
SOON = 5  # seconds: half a poll interval
WORKER = "queue_worker_thread"  # the private DBOS function queue_wakes.py wraps


def queue_workers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("queue-worker-threadbound")]


class Sleepers:
    """The queue workers in their sleep between two polls right now."""

    def __init__(self, monkeypatch) -> None:
        self.now: set[str] = set()
        sleep = QueueWakes.sleep

        def watched(wakes: QueueWakes, queue: str, seen: int, timeout: float | None) -> int:
            name = threading.current_thread().name
            self.now.add(name)
            try:
                return sleep(wakes, queue, seen, timeout)
            finally:
                self.now.discard(name)

        monkeypatch.setattr(QueueWakes, "sleep", watched)


async def test_queued_runs_start_when_woken_not_at_the_next_poll(tmp_path, monkeypatch):
    work = Work()
    sleepers = Sleepers(monkeypatch)
    async with running_core(tmp_path, ScriptedModels(work=work), CONFIG, durable=True) as core:
        first = await spawn(core, ORIGIN, "a")
        await settle(core, lambda: work.started == ["a"], timeout=SOON)
        behind = [await spawn(core, ORIGIN, task) for task in ("b", "c")]
        assert [(await core.runs.get(run_id)).status for run_id in behind] == [RunStatus.QUEUED] * 2
        assert work.started == ["a"]  # the lane of one is taken

        for done, started in (("a", ["a", "b"]), ("b", ["a", "b", "c"])):
            work.finish(done)
            await settle(core, lambda started=started: work.started == started, timeout=SOON)
        work.finish("c")
        for run_id in (first, *behind):
            await settle(core, lambda run_id=run_id: _completed(core, run_id), timeout=SOON)

        later = await spawn(core, ORIGIN, "d")  # the lane idle again: a run queued now starts as soon
        work.finish("d")
        await settle(core, lambda: _completed(core, later), timeout=SOON)
        turn = await core.chat(ChatRequest(text="hello", origin=ORIGIN))  # the main agent's queue is woken too
        await settle(core, lambda: len(work.started) == 5, timeout=SOON)
        work.finish(work.started[-1])  # named by its first prompt: the children's results it was told of
        await settle(core, lambda: _completed(core, turn), timeout=SOON)
        elsewhere = replace(ORIGIN, channel_id=200, conversation="discord:channel:200")
        turns = [await core.chat(ChatRequest(text=text, origin=elsewhere)) for text in ("one", "two")]
        await settle(core, lambda: len(work.started) == 6, timeout=SOON)
        assert (await core.runs.get(turns[1])).status is RunStatus.QUEUED  # behind its session's turn in flight
        work.finish(work.started[-1])  # that turn's end wakes the main agent's queue for the next
        for run_id in turns:
            await settle(core, lambda run_id=run_id: _completed(core, run_id), timeout=SOON)
        assert len(work.started) == 7
        assert queue_workers()
        await eventually(  # they poll after the turn's end, then sleep
            lambda: set(queue_workers()) <= sleepers.now, timeout=SOON, describe="every queue worker asleep"
        )
        closing = time.monotonic()
    assert time.monotonic() - closing < SOON, "the close waited for the queue workers' sleep"
    assert not queue_workers()


async def test_dbos_own_queue_polls_as_often_as_the_runs_queues_but_never_less_often_than_its_default(tmp_path):
    """The runs DBOS recovers at a start (and those resumed for a dead process) wait in DBOS's own queue: with a short
    ``queue_poll_seconds`` they start within it, and a long one leaves that queue at DBOS's default second."""
    for poll, expected in (("0.2", 0.2), ("10", dbos_queue.DEFAULT_QUEUE_POLLING_INTERVAL_SEC)):
        (tmp_path / poll).mkdir()
        config = CONFIG.replace("queue_poll_seconds = 10", f"queue_poll_seconds = {poll}")
        async with running_core(tmp_path / poll, ScriptedModels(work=Work()), config, durable=True):
            internal = dbos_registry._get_or_create_dbos_registry().get_internal_queue()
            assert internal._polling_interval_sec == expected


async def _completed(core, run_id: str) -> bool:
    return (await core.runs.get(run_id)).status is RunStatus.COMPLETED


def test_a_wake_polls_only_the_queues_it_names():
    """A poll costs milliseconds of CPU: a run queued on one queue does not make the other queues' workers poll."""
    wakes = QueueWakes()
    polled: dict[str, int] = {}

    def worker(queue: str) -> None:
        polled[queue] = wakes.sleep(queue, 0, 10)

    workers = [threading.Thread(target=worker, args=(queue,)) for queue in ("subagents", "chat")]
    for thread in workers:
        thread.start()
    wakes.wake("subagents")
    workers[0].join(SOON)
    assert polled == {"subagents": 1} and workers[1].is_alive()
    wakes.wake("subagents", "chat")
    workers[1].join(SOON)
    assert polled == {"subagents": 1, "chat": 1}
    assert (wakes.count("subagents"), wakes.count("chat")) == (2, 1)


DBOS_CHANGED = (
    "dbos._queue changed shape: bot/core/durable/queue_wakes.py wraps DBOS's queue worker and must be updated "
    "to the new worker (read dbos/_queue.py of the pinned version), then this test with it"
)


def test_the_dbos_queue_worker_that_wakes_wrap_still_has_the_shape_they_rely_on():
    """``listen`` replaces ``dbos._queue.queue_worker_thread``, a private function: a new DBOS must fail here."""
    assert hasattr(dbos_queue, WORKER), f"{DBOS_CHANGED}: no dbos._queue.{WORKER}"
    worker = queue_wakes._worker  # DBOS's own, taken at import: once listening, the module attribute is the wrapper
    assert inspect.isfunction(worker), f"{DBOS_CHANGED}: dbos._queue.{WORKER} is not a function"
    assert (worker.__module__, worker.__qualname__) == (dbos_queue.__name__, WORKER), f"{DBOS_CHANGED}: not {WORKER}"
    parameters = inspect.signature(worker).parameters
    assert list(parameters) == ["stop_event", "dbos", "queue"], f"{DBOS_CHANGED}: its parameters are {parameters}"
    assert parameters["stop_event"].annotation is threading.Event, f"{DBOS_CHANGED}: stop_event is not an Event"
    # The worker sleeps between polls on ``stop_event.wait(...)`` and loops while ``not stop_event.is_set()``:
    # the two methods ``_Interval`` overrides.
    body = inspect.getsource(worker)
    for call in ("stop_event.is_set()", "stop_event.wait("):
        assert call in body, f"{DBOS_CHANGED}: the worker no longer calls {call}"
    # The manager starts each worker by the module's global name, so replacing the attribute reaches every new one.
    assert WORKER in dbos_queue.queue_thread.__code__.co_names, f"{DBOS_CHANGED}: queue_thread does not call it"
    assert parameters["queue"].annotation is Queue, f"{DBOS_CHANGED}: queue is not a dbos.Queue (woken by its name)"
