"""The sub-agent lane: at most ``max_concurrent`` runs at once, and a freed slot goes round-robin across members,
then across a member's top-level runs, so one member's fan-out cannot starve another member's first spawn (it
waits for at most one slot turnover per other member ahead of it). Inside one (member, top-level run) bucket the
order is first come, first served, so the lane's order is deterministic.

Waiters live in memory: they are this process's queued runs (a previous process's queued runs are settled as
interrupted at start-up), so the database stays the only state that outlives a restart. A run waits as a small entry
(``join``: its ticket and what starts it once it holds a slot), with no task of its own; ``slot`` is the same wait for
a task that is already running.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

Member = int | None  # who a run answers to; ``None`` (a schedule from config.toml) is a bucket of its own


Start = Callable[[str], object]  # called with a joined ticket once it holds a slot


@dataclass(frozen=True, slots=True)
class _Waiter:
    ticket: str
    granted: asyncio.Future[None] | Start  # a waiting task's future, or what starts a joined ticket's run


# member → top-level run → its waiters; each dict's order is a rotation: the first key is served next
Buckets = dict[Member, dict[str, deque[_Waiter]]]


def _take(buckets: Buckets) -> _Waiter:
    """Pop the next waiter in fair order.

    Its member and its top-level run move to the back of their rotations."""
    member, roots = next(iter(buckets.items()))
    root, waiters = next(iter(roots.items()))
    waiter = waiters.popleft()
    del roots[root], buckets[member]
    if waiters:
        roots[root] = waiters
    if roots:
        buckets[member] = roots
    return waiter


class FairLane:
    def __init__(self, slots: int) -> None:
        self._free = slots
        self._buckets: Buckets = {}
        self._held: set[str] = set()  # joined tickets holding a slot, until ``release``

    @contextlib.asynccontextmanager
    async def slot(self, ticket: str, member: Member, root: str) -> AsyncIterator[None]:
        """Hold one slot for the body; ``ticket`` names the waiter (a run id), ``root`` its top-level run."""
        await self._acquire(ticket, member, root)
        try:
            yield
        finally:
            self._release()

    def join(self, ticket: str, member: Member, root: str, start: Start) -> None:
        """Queue ``ticket`` with no task waiting: ``start(ticket)`` is called once it holds a slot (at once if one is
        free), which it holds until ``release(ticket)``.

        ``start`` should be one object shared by many tickets: it is kept with each."""
        if self._free:
            self._free -= 1
            self._hand(_Waiter(ticket, start))
        else:
            self._queue(_Waiter(ticket, start), member, root)

    def holds(self, ticket: str) -> bool:
        """Whether a joined ticket holds its slot now."""
        return ticket in self._held

    def release(self, ticket: str) -> None:
        """Give back a joined ticket's slot (a second release of it does nothing)."""
        if ticket in self._held:
            self._held.discard(ticket)
            self._release()

    @property
    def waiting(self) -> bool:
        return bool(self._buckets)

    def clear(self) -> None:
        """Drop every waiter: this process stops executing runs.

        A waiting task's wait is cancelled."""
        for roots in self._buckets.values():
            for waiters in roots.values():
                for waiter in waiters:
                    if isinstance(waiter.granted, asyncio.Future):
                        waiter.granted.cancel()
        self._buckets.clear()

    def order(self) -> list[str]:
        """The waiting tickets in the order slots will go to them.

        The first starts next."""
        buckets = {member: {root: deque(w) for root, w in roots.items()} for member, roots in self._buckets.items()}
        return [_take(buckets).ticket for _ in range(sum(len(w) for r in buckets.values() for w in r.values()))]

    def withdraw(self, ticket: str) -> bool:
        """Take a waiter whose run was killed out of the queue, touching nobody's turn.

        ``False`` if it is not waiting (it has a slot already, or never asked). Its caller then cancels the waiting
        task, if one waits."""
        for member, roots in self._buckets.items():
            for root, waiters in roots.items():
                for waiter in waiters:
                    if waiter.ticket == ticket:
                        self._remove(member, root, waiter)
                        return True
        return False

    async def _acquire(self, ticket: str, member: Member, root: str) -> None:
        if self._free:
            self._free -= 1
            return
        granted = asyncio.get_running_loop().create_future()
        self._queue(_Waiter(ticket, granted), member, root)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.cancelled():
                self.withdraw(ticket)
            else:  # the slot was handed over just before the cancellation landed: pass it on
                self._release()
            raise

    def _queue(self, waiter: _Waiter, member: Member, root: str) -> None:
        self._buckets.setdefault(member, {}).setdefault(root, deque()).append(waiter)

    def _release(self) -> None:
        """Hand the freed slot straight to the next waiter, else keep it.

        A waiter cancelled meanwhile is skipped."""
        while self._buckets:
            if self._hand(_take(self._buckets)):
                return
        self._free += 1

    def _hand(self, waiter: _Waiter) -> bool:
        """Give ``waiter`` the slot in hand; ``False`` if its task stopped waiting meanwhile."""
        if isinstance(waiter.granted, asyncio.Future):
            if waiter.granted.done():
                return False
            waiter.granted.set_result(None)
            return True
        self._held.add(waiter.ticket)
        waiter.granted(waiter.ticket)
        return True

    def _remove(self, member: Member, root: str, waiter: _Waiter) -> None:
        roots = self._buckets[member]
        roots[root].remove(waiter)
        if not roots[root]:
            del roots[root]
        if not roots:
            del self._buckets[member]
