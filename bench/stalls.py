"""The event loop's stalls, as a ticker of 1 ms sleeps sees them.

Each gap beyond the 1 ms asked for is a stall other tasks (gateway heartbeats, live runs) would see too.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
TICK = 0.001


async def ticker(stalls: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(TICK)
        stalls.append(time.perf_counter() - started - TICK)


async def stalls_while(work: Callable[[], Awaitable[T]]) -> tuple[T, list[float]]:
    """``work()``'s result and every stall the ticker saw while it ran (at least one: 0)."""
    stalls: list[float] = [0.0]
    stop = asyncio.Event()
    ticking = asyncio.create_task(ticker(stalls, stop))
    await asyncio.sleep(0)
    try:
        result = await work()
    finally:
        stop.set()
        await ticking
    return result, stalls


def percentile(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100)[q - 1] if len(samples) > 1 else samples[0]
