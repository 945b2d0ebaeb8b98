"""Waiting for an event with a time limit, in a cancellable task.

On Python 3.11, ``asyncio.wait_for`` swallows a cancellation that arrives as the awaited event is set: the task goes
on as if nothing happened, and a loop around the wait never stops (a delivery worker that never closes). A close then
hangs for ever. ``asyncio.timeout`` hands the cancellation on."""

from __future__ import annotations

import asyncio
import contextlib


async def wait_set(event: asyncio.Event, timeout: float) -> bool:
    """Wait until ``event`` is set or ``timeout`` seconds have passed; whether it is set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await event.wait()
    return event.is_set()
