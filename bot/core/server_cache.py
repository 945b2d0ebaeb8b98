"""Per-server values read on every request and written rarely, kept in memory.

The values are settings and budget caps, read from the database. A read that overlaps a write never puts the old values
back: what it read is kept only when no write to that server happened while it was reading. A value is kept ``max_age``
seconds at most: another process sharing the database may write it, and its writes reach this process within that
time."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")
MAX_AGE = 30.0


class ServerCache(Generic[T]):
    def __init__(
        self,
        load: Callable[[int], Awaitable[T]],
        max_age: float = MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self._max_age = max_age
        self._clock = clock
        self._values: dict[int, tuple[T, float]] = {}
        self._writes: Counter[int] = Counter()

    async def get(self, guild_id: int) -> T:
        kept = self._values.get(guild_id)
        if kept is not None and self._clock() - kept[1] < self._max_age:
            return kept[0]
        writes, read_at = self._writes[guild_id], self._clock()
        value = await self._load(guild_id)
        if self._writes[guild_id] == writes:
            self._values[guild_id] = (value, read_at)
        return value

    def written(self, guild_id: int) -> None:
        """The server's values changed (call it once the write is committed)."""
        self._writes[guild_id] += 1
        self._values.pop(guild_id, None)
