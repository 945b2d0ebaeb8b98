"""Per-server values read from the database on every request and written rarely (settings, budget caps), kept in
memory. A read that overlaps a write never puts the old values back: what it read is kept only when no write to
that server happened while it was reading."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class ServerCache(Generic[T]):
    def __init__(self, load: Callable[[int], Awaitable[T]]) -> None:
        self._load = load
        self._values: dict[int, T] = {}
        self._writes: Counter[int] = Counter()

    async def get(self, guild_id: int) -> T:
        if guild_id in self._values:
            return self._values[guild_id]
        writes = self._writes[guild_id]
        value = await self._load(guild_id)
        if self._writes[guild_id] == writes:
            self._values[guild_id] = value
        return value

    def written(self, guild_id: int) -> None:
        """The server's values changed (call it once the write is committed)."""
        self._writes[guild_id] += 1
        self._values.pop(guild_id, None)
