"""``wait_set``: a task looping on it stops when cancelled, even when the cancellation arrives as the event is set
(Python 3.11's ``asyncio.wait_for`` swallowed that one: the delivery worker's loop went on and a close hung)."""

from __future__ import annotations

import asyncio

import pytest

from bot.waiting import wait_set


async def test_a_loop_cancelled_as_its_event_is_set_stops():
    event, rounds = asyncio.Event(), []

    async def loop() -> None:
        while True:
            rounds.append(await wait_set(event, 60))
            event.clear()

    task = asyncio.create_task(loop())
    await asyncio.sleep(0.01)  # the loop is in its wait when the event is set
    event.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(task), 2)
    assert task.cancelled()


async def test_it_says_whether_the_event_was_set_or_the_time_ran_out():
    event = asyncio.Event()
    assert await wait_set(event, 0.01) is False
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await wait_set(event, 5) is True
