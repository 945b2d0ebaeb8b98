"""Keyed locks: one holder per key at a time, and a key's lock kept only while it is held or awaited."""

from __future__ import annotations

import asyncio

import pytest

from bot.keyed_locks import KeyedLocks

pytestmark = pytest.mark.asyncio


async def test_one_holder_per_key_and_nothing_kept_after():
    locks: KeyedLocks[str] = KeyedLocks()
    order: list[str] = []
    inside = asyncio.Event()
    leave = asyncio.Event()

    async def first() -> None:
        async with locks.hold("a"):
            order.append("first in")
            inside.set()
            await leave.wait()
            order.append("first out")

    async def second() -> None:
        async with locks.hold("a"):
            order.append("second in")

    one = asyncio.create_task(first())
    await inside.wait()
    two = asyncio.create_task(second())
    async with locks.hold("b"):  # another key is free meanwhile
        assert len(locks) == 2
    await asyncio.sleep(0)
    assert order == ["first in"] and len(locks) == 1  # "a": held, and awaited by the second
    leave.set()
    await asyncio.gather(one, two)
    assert order == ["first in", "first out", "second in"]
    assert len(locks) == 0


async def test_a_waiter_cancelled_leaves_nothing_behind():
    locks: KeyedLocks[int] = KeyedLocks()
    await locks.acquire(1)
    waiter = asyncio.create_task(locks.acquire(1))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert len(locks) == 1
    locks.release(1)
    assert len(locks) == 0


async def test_several_keys_are_taken_in_order_and_a_waiter_cancelled_on_a_later_key_lets_go_of_the_earlier():
    locks: KeyedLocks[str] = KeyedLocks()
    async with locks.hold("agent"):  # an agent's spawn already holds its session's key
        waiter = asyncio.create_task(locks.hold("member", "agent").__aenter__())
        await asyncio.sleep(0)
        assert len(locks) == 2  # the member's key taken, the agent's awaited
        blocked = asyncio.create_task(locks.hold("member").__aenter__())  # the member's own command waits
        await asyncio.sleep(0)
        assert not blocked.done()
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
    await asyncio.wait_for(blocked, 1)  # the member's key was let go
    locks.release("member")
    assert len(locks) == 0


async def test_a_waiter_cancelled_after_being_handed_the_key_passes_it_on():
    locks: KeyedLocks[str] = KeyedLocks()
    await locks.acquire("a")
    handed = asyncio.create_task(locks.acquire("a"))
    after = asyncio.create_task(locks.acquire("a"))
    await asyncio.sleep(0)
    locks.release("a")  # the first waiter is handed the key ...
    handed.cancel()  # ... and cancelled before it resumes
    with pytest.raises(asyncio.CancelledError):
        await handed
    await asyncio.wait_for(after, 1)  # the key went on to the next waiter, not lost
    assert len(locks) == 1
    locks.release("a")
    assert len(locks) == 0


async def test_waiters_are_served_first_come_first_served():
    locks: KeyedLocks[str] = KeyedLocks()
    order: list[int] = []
    await locks.acquire("a")

    async def take(n: int) -> None:
        await locks.acquire("a")
        order.append(n)
        locks.release("a")

    waiting = [asyncio.create_task(take(n)) for n in range(5)]
    await asyncio.sleep(0)
    waiting[2].cancel()
    locks.release("a")
    await asyncio.gather(*waiting, return_exceptions=True)
    assert order == [0, 1, 3, 4] and len(locks) == 0
