"""One asyncio lock per key, kept only while someone holds or waits for it.

A key is a session, a conversation, a channel. Keys come from what people and agents do, so a plain ``dict[key, Lock]``
grows by one lock for every session or conversation ever seen. Here a key's lock leaves the table when its last holder
or waiter is done: a lock nobody holds or awaits is the same as a new one, so dropping it changes nothing for the next
caller.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from types import TracebackType
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class _Entry:
    """A key held: who waits for it next, first come first served."""

    __slots__ = ("waiters",)

    def __init__(self) -> None:
        self.waiters: deque[asyncio.Future[None]] = deque()


class KeyedLocks(Generic[K]):
    """Locks by key: ``async with locks.hold(key)``, or ``acquire``/``release`` for a caller that keeps no frame.

    A key's entry exists while it is held. A waiter is one future in its queue, awaited by ``acquire``'s one frame:
    thousands of callers waiting for one key (a member's burst of spawns) hold little each."""

    def __init__(self) -> None:
        self._entries: dict[K, _Entry] = {}

    def __len__(self) -> int:
        """How many keys have a lock now (each held or awaited)."""
        return len(self._entries)

    async def acquire(self, key: K) -> None:
        entry = self._entries.get(key)
        if entry is None:
            self._entries[key] = _Entry()
            return
        waiter = asyncio.get_running_loop().create_future()
        entry.waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():  # handed the key, then cancelled before it resumed
                self.release(key)
            raise  # a cancelled waiter stays queued, done: a release passes over it (no scan of the queue)

    def release(self, key: K) -> None:
        """Hand the key to its first waiter still waiting; with none, the key is free and its entry leaves."""
        entry = self._entries[key]
        while entry.waiters:
            waiter = entry.waiters.popleft()
            if not waiter.done():  # a cancelled waiter is done
                waiter.set_result(None)
                return
        del self._entries[key]

    def hold(self, *keys: K) -> _Held[K]:
        """Each key's lock, taken in the order given (the same order everywhere: no deadlock), released in reverse."""
        return _Held(self, keys)


class _Held(Generic[K]):
    """``async with`` over some keys' locks (a plain object: no generator frame per waiter)."""

    __slots__ = ("_keys", "_locks")

    def __init__(self, locks: KeyedLocks[K], keys: tuple[K, ...]) -> None:
        self._locks = locks
        self._keys = keys

    async def __aenter__(self) -> None:
        taken: list[K] = []
        try:
            for key in self._keys:
                await self._locks.acquire(key)
                taken.append(key)
        except BaseException:  # cancelled while waiting for a later key: let go of the earlier ones
            for key in reversed(taken):
                self._locks.release(key)
            raise

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        for key in reversed(self._keys):
            self._locks.release(key)
