"""Waking DBOS's queue workers: a run queued in this process starts its queue's next poll at once, and the end of a
workflow here (a place free again) the next poll of the queues it may have held a place in, instead of after
``[durability] queue_poll_seconds``. Only the queues named are woken: a poll costs a few milliseconds of CPU (DBOS
reloads the queue, checks the application version and claims in their own transactions), and waking every worker
for every run made polls most of a durable run's cost.

Open-source DBOS has no wake: each queue's worker thread sleeps its polling interval on the event that stops it. At
launch each worker is handed, in that event's place, a :class:`_Interval` that a wake also ends, so every rule of the
queues (limits across processes, priorities, partitions) stays DBOS's: a wake only moves its next poll forward. Other
processes' workers still find a run queued here at their own next poll.

``dbos`` is pinned (``pyproject.toml``): the worker's loop is ``while not stop.is_set(): … if stop.wait(interval):
return …`` in ``dbos._queue.queue_worker_thread``, which :func:`listen` wraps.
"""

from __future__ import annotations

import threading

import dbos._dbos as dbos_registry  # its own queue's registry, which DBOS does not export
import dbos._queue as dbos_queue  # the worker thread's function, which DBOS does not export
from dbos import DBOS, Queue

_worker = dbos_queue.queue_worker_thread
_current: QueueWakes | None = None  # DBOS is one instance per process: the wakes of the one launched last


class QueueWakes:
    """A count of wakes per queue, and whether the workers should stop.

    Each worker compares a queue's count with the last it saw, so a wake during a poll is not lost: the worker polls
    again at once."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._counts: dict[str, int] = {}
        self.closed = False

    def count(self, queue: str) -> int:
        with self._changed:
            return self._counts.get(queue, 0)

    def wake(self, *queues: str) -> None:
        with self._changed:
            for queue in queues:
                self._counts[queue] = self._counts.get(queue, 0) + 1
            self._changed.notify_all()

    def close(self) -> None:
        """The workers end their wait and stop (DBOS is being stopped: a worker left asleep would hold up its stop
        for up to a polling interval)."""
        with self._changed:
            self.closed = True
            self._changed.notify_all()

    def sleep(self, queue: str, seen: int, timeout: float | None) -> int:
        """Wait up to ``timeout`` for a wake of ``queue`` after ``seen`` (or the close); its count then."""
        with self._changed:
            self._changed.wait_for(lambda: self._counts.get(queue, 0) != seen or self.closed, timeout)
            return self._counts.get(queue, 0)


class _Interval(threading.Event):
    """What one queue worker waits on between polls, in place of DBOS's stop event: that event, or a wake."""

    def __init__(self, stop: threading.Event, wakes: QueueWakes, queue: str) -> None:
        super().__init__()
        self._stop = stop
        self._wakes = wakes
        self._queue = queue
        self._seen = wakes.count(queue)

    def is_set(self) -> bool:
        return self._stop.is_set() or self._wakes.closed

    def wait(self, timeout: float | None = None) -> bool:
        """True: stop. False: poll (the interval is over, or a wake came)."""
        if not self.is_set():
            self._seen = self._wakes.sleep(self._queue, self._seen, timeout)
        return self.is_set()


def _waking_worker(stop_event: threading.Event, dbos: DBOS, queue: Queue) -> None:
    assert _current is not None, "a queue worker started before listen()"
    _worker(_Interval(stop_event, _current, queue.name), dbos, queue)


def listen(wakes: QueueWakes, poll_seconds: float) -> None:
    """Before ``DBOS.launch()``: the queue workers it starts are woken by ``wakes``.

    DBOS's own queue, where the workflows it recovers at launch (and those resumed for a dead process) wait, polls
    every ``poll_seconds`` when that is shorter than its one-second default: like the runs' queues, and no slower
    than DBOS's default."""
    global _current
    _current = wakes
    dbos_queue.queue_worker_thread = _waking_worker
    internal = dbos_registry._get_or_create_dbos_registry().get_internal_queue()  # lives as long as the process
    internal._polling_interval_sec = min(poll_seconds, dbos_queue.DEFAULT_QUEUE_POLLING_INTERVAL_SEC)
