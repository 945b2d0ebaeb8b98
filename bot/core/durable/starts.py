"""Lane runs holding a place here: their workflows started a bounded number at a time, their places handed on.

A lane as wide as a burst gives every run of it a place at once. Starting every workflow together would make a task
each in one turn of the loop, all of them asking DBOS's connection pool for a connection at once: the loop stalls
and the pool runs dry. So a run holding a place waits here, as its run id in a deque, until fewer than ``width``
workflows are starting; a workflow has started once its body begins (DBOS has recorded it) or its task has ended.
A run waiting here keeps its place in the store: a crash meanwhile leaves it queued with a place and no workflow,
which the next start starts.

When a run that held a place ends here, the free places go to the runs first in line (``durable.lane_places``), one
look for every place freed in the same turn of the loop; every ``queue_poll_seconds`` too, for places freed in other
processes.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable

import structlog

from bot.core.durable.lane_places import LanePlaces
from bot.waiting import wait_set

log = structlog.get_logger(__name__)
WIDTH = 16  # workflows starting at once: below DBOS's connection pool (20), which its other work shares
Launch = Callable[[str, bool], asyncio.Task[object]]  # (run id, woken) → the run's task, which starts its workflow


class Starts:
    def __init__(self, places: LanePlaces, launch: Launch) -> None:
        self._places = places
        self._launch = launch
        self._width = WIDTH
        self._waiting: deque[tuple[str, bool]] = deque()
        self._held: set[str] = set()  # the runs waiting or starting
        self._starting: set[str] = set()
        self._holding: set[str] = set()  # runs executing here that hold a place
        self._freed = asyncio.Event()  # a place may be free: hand the free ones out now

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._held

    @property
    def pending(self) -> bool:
        """Whether a run still waits for its workflow to start."""
        return bool(self._waiting)

    def add(self, run_id: str, woken: bool) -> None:
        """Start ``run_id``'s workflow once fewer than ``width`` are starting.

        The run holds a place here."""
        self._waiting.append((run_id, woken))
        self._held.add(run_id)
        self._next()

    def begun(self, run_id: str, *, holding: bool) -> None:
        """``run_id``'s workflow has started (its body began, or its task ended): the next one may start.

        ``holding``: the run holds a place here, handed on when its task ends."""
        if holding:
            self._holding.add(run_id)
        if run_id in self._starting:
            self._starting.discard(run_id)
            self._held.discard(run_id)
            self._next()

    def ended(self, run_id: str) -> None:
        """A run's task ended here: the place it held (if it did) is handed on now."""
        if run_id in self._holding:
            self._holding.discard(run_id)
            self._freed.set()

    def look(self) -> None:
        """Look for free places now: one may have been given back without a task here ending."""
        self._freed.set()

    def clear(self) -> None:
        self._waiting.clear()
        self._held.clear()
        self._starting.clear()

    async def hand_out(self) -> None:
        """Hand the free places to the runs first in line, and start them.

        A task's loop."""
        while True:
            await wait_set(self._freed, self._places.look_again_seconds)
            self._freed.clear()
            try:
                handed = await self._places.hand_out()
            except Exception:  # the store failed us: the next look hands them out
                log.exception("lane_places_not_handed_out")
                continue
            for run_id, woken in handed:
                self.add(run_id, woken)

    def _next(self) -> None:
        while self._waiting and len(self._starting) < self._width:
            run_id, woken = self._waiting.popleft()
            self._starting.add(run_id)
            self._holding.add(run_id)
            self._launch(run_id, woken).add_done_callback(functools.partial(self._task_ended, run_id))

    def _task_ended(self, run_id: str, task: asyncio.Task[object]) -> None:
        self.begun(run_id, holding=False)
