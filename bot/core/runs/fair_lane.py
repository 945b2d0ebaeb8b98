"""The sub-agent lane: at most ``max_concurrent`` runs at once, and a freed slot goes round-robin across members,
then across a member's top-level runs, so one member's fan-out cannot starve another member's first spawn (it
waits for at most one slot turnover per other member ahead of it). Inside one (member, top-level run) bucket the
order is first come, first served, so the lane's order is deterministic.

Waiters live in memory: they are this process's queued runs (a previous process's queued runs are settled as
interrupted at start-up), so the database stays the only state that outlives a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass

Member = int | None  # who a run answers to; ``None`` (a schedule from config.toml) is a bucket of its own


@dataclass(frozen=True)
class _Waiter:
    ticket: str
    granted: asyncio.Future[None]


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

    @contextlib.asynccontextmanager
    async def slot(self, ticket: str, member: Member, root: str) -> AsyncIterator[None]:
        """Hold one slot for the body; ``ticket`` names the waiter (a run id), ``root`` its top-level run."""
        await self._acquire(ticket, member, root)
        try:
            yield
        finally:
            self._release()

    def order(self) -> list[str]:
        """The waiting tickets in the order slots will go to them.

        The first starts next."""
        buckets = {member: {root: deque(w) for root, w in roots.items()} for member, roots in self._buckets.items()}
        return [_take(buckets).ticket for _ in range(sum(len(w) for r in buckets.values() for w in r.values()))]

    def withdraw(self, ticket: str) -> bool:
        """Take a waiter whose run was killed out of the queue, touching nobody's turn.

        ``False`` if it is not waiting (it has a slot already, or never asked). Its caller then cancels the waiting
        task."""
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
        waiter = _Waiter(ticket, asyncio.get_running_loop().create_future())
        self._buckets.setdefault(member, {}).setdefault(root, deque()).append(waiter)
        try:
            await waiter.granted
        except asyncio.CancelledError:
            if waiter.granted.cancelled():
                self.withdraw(ticket)
            else:  # the slot was handed over just before the cancellation landed: pass it on
                self._release()
            raise

    def _release(self) -> None:
        """Hand the freed slot straight to the next waiter, else keep it.

        A waiter cancelled meanwhile is skipped."""
        while self._buckets:
            waiter = _take(self._buckets)
            if not waiter.granted.done():
                waiter.granted.set_result(None)
                return
        self._free += 1

    def _remove(self, member: Member, root: str, waiter: _Waiter) -> None:
        roots = self._buckets[member]
        roots[root].remove(waiter)
        if not roots[root]:
            del roots[root]
        if not roots:
            del self._buckets[member]
