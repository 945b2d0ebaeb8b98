"""The per-server cache: one read per server until a write (or until its values are ``max_age`` old: another
process may have written them), and a read that overlaps a write never puts the values from before the write
back."""

from __future__ import annotations

import asyncio

from bot.core.server_cache import ServerCache


class Table:
    """A stored value per server, whose reads the test can hold half-way."""

    def __init__(self) -> None:
        self.value = "old"
        self.reads = 0
        self.hold: asyncio.Event | None = None

    async def load(self, guild_id: int) -> str:
        self.reads += 1
        value = self.value
        if self.hold is not None:
            await self.hold.wait()
        return value


async def test_values_are_read_once_until_a_write():
    table = Table()
    cache = ServerCache(table.load)
    assert [await cache.get(1), await cache.get(1), await cache.get(2)] == ["old", "old", "old"]
    assert table.reads == 2
    table.value = "new"
    cache.written(1)
    assert (await cache.get(1), table.reads) == ("new", 3)


async def test_a_read_that_overlaps_a_write_does_not_keep_the_old_values():
    table = Table()
    cache = ServerCache(table.load)
    table.hold = asyncio.Event()
    slow = asyncio.create_task(cache.get(1))
    await asyncio.sleep(0)  # it has read "old" and waits
    table.value = "new"
    cache.written(1)
    table.hold.set()
    assert await slow == "old"  # what it read when it began
    table.hold = None
    assert await cache.get(1) == "new"


async def test_a_value_another_process_wrote_is_read_again_once_the_kept_one_is_max_age_old():
    table, now = Table(), [100.0]
    cache = ServerCache(table.load, max_age=30, clock=lambda: now[0])
    assert await cache.get(1) == "old"
    table.value = "new"  # written by another process: this one is not told
    now[0] += 29.9
    assert (await cache.get(1), table.reads) == ("old", 1)
    now[0] += 0.1
    assert (await cache.get(1), table.reads) == ("new", 2)
    now[0] += 10
    assert (await cache.get(1), table.reads) == ("new", 2)
