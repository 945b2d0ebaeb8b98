"""One asyncio lock per key, kept only while someone holds or waits for it.

A key is a session, a conversation, a channel. Keys come from what people and agents do, so a plain ``dict[key, Lock]``
grows by one lock for every session or conversation ever seen. Here a key's lock leaves the table when its last holder
or waiter is done: a lock nobody holds or awaits is the same as a new one, so dropping it changes nothing for the next
caller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from types import TracebackType
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0  # holders and waiters


class KeyedLocks(Generic[K]):
    """Locks by key: ``async with locks.hold(key)``, or ``acquire``/``release`` for a caller that keeps no frame."""

    def __init__(self) -> None:
        self._entries: dict[K, _Entry] = {}

    def __len__(self) -> int:
        """How many keys have a lock now (each held or awaited)."""
        return len(self._entries)

    async def acquire(self, key: K) -> None:
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        entry.users += 1
        try:
            await entry.lock.acquire()
        except BaseException:  # cancelled while waiting: no longer a waiter
            self._leave(key, entry)
            raise

    def release(self, key: K) -> None:
        entry = self._entries[key]
        entry.lock.release()
        self._leave(key, entry)

    def hold(self, *keys: K) -> _Held[K]:
        """Each key's lock, taken in the order given (the same order everywhere: no deadlock), released in reverse."""
        return _Held(self, keys)

    def _leave(self, key: K, entry: _Entry) -> None:
        entry.users -= 1
        if entry.users == 0:
            del self._entries[key]


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
