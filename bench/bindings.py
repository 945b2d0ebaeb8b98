"""Thread bindings at scale: a store holding ``--bindings`` bindings with deadlines, measured in one process.

Run by hand from the repository's root: ``.venv/bin/python -m bench.bindings [--bindings 100000] [--lookups 5000]
[--stores sqlite,postgresql]``. On a fresh database of each store (one session, every binding on it, deadlines
spread over the next day):

- ``start-up``: the core's start (every room; the bindings' deadline sweep armed) while a ticker (1 ms sleeps)
  records the loop's longest stall; goal ≤ 2 s, no stall over 100 ms;
- ``reconcile``: what checking every binding against Discord asks of it (a thread port that answers at once, as
  if every thread were active, and counts the requests the Discord adapter would make): requests and wall time;
  goal: one request per server, not one per binding;
- ``routing lookup``: which session a thread message goes to (``BoundThreads.session_of``: with PostgreSQL a map in
  memory that follows the table through the store's notices, with SQLite the table), p50 and p99 over ``--lookups``
  random threads (half bound), against a dict lookup of the same ids (the floor); goal p99 ≤ 0.1 ms.

The machine is shared: compare ratios more than times.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Collection
from typing import TypeVar

from bench.floor import CHANNEL_ID
from bench.orchestrator_overhead import InstantModels
from bench.stalls import percentile, stalls_while
from bench.stores import STORES, BenchStores, bench_stores
from bench.table import TARGETS, verdict
from bot import heap
from bot.config import parse_config
from bot.core.orchestrator import Orchestrator
from bot.core.runs.requests import SpawnRequest
from bot.core.threads.port import ThreadRef
from bot.logging_setup import configure_logging
from bot.records import Origin
from storage.bindings import NOTICES
from storage.db import Database

T = TypeVar("T")
CONFIG = '[agents.defaults]\nmodel = "bench/instant"\n'
GUILD_ID = 3
ORIGIN = Origin(user_id=1, channel_id=CHANNEL_ID, conversation="bench:1", guild_id=GUILD_ID)
DAY = 86400.0


class CountingThreads:
    """A thread port that answers at once and counts what it is asked.

    Every thread is open."""

    def __init__(self) -> None:
        self.requests = 0

    async def create_thread(self, channel_id: int, name: str, auto_archive_minutes: int) -> ThreadRef:
        raise AssertionError("the bench creates no thread")

    async def post(self, thread_id: int, text: str) -> None:
        self.requests += 1

    async def archive(self, thread_id: int) -> None:
        self.requests += 1

    async def closed_among(self, guild_id: int, channel_ids: Collection[int]) -> dict[int, bool | None]:
        self.requests += 1  # the adapter's one request for the server's active threads (all of them are)
        return dict.fromkeys(channel_ids, False)


async def filled(url: str, bindings: int) -> None:
    """The store with one session bearing ``bindings`` bindings, none due for an hour.

    Their thread ids are 1…n."""
    db = await Database.open(url)
    core = Orchestrator(parse_config(CONFIG), db, InstantModels())
    await core.start()
    session_key = (await core.spawn(SpawnRequest(agent_id="main", task="bench", origin=ORIGIN))).session_key
    await core.core.dispatch.wait_idle()
    await core.close()
    now = time.time()
    rows = [
        (thread_id, CHANNEL_ID, GUILD_ID, session_key, 1, now, now, DAY, 0.0, now + DAY * (0.05 + thread_id / bindings))
        for thread_id in range(1, bindings + 1)
    ]
    async with db.transaction() as tx:
        await tx.executemany(
            "INSERT INTO thread_bindings (thread_id, parent_channel_id, guild_id, session_key, bound_by, bound_at, "
            "last_activity_at, idle_seconds, max_age_seconds, deadline_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    await db.close()


async def watched(work: Callable[[], Awaitable[T]]) -> tuple[T, float, float]:
    """``work()``'s result, its wall time, and the loop's longest stall while it ran."""
    started = time.perf_counter()
    result, stalls = await stalls_while(work)
    return result, time.perf_counter() - started, max(stalls)


async def measure(store: str, url: str, bindings: int, lookups: int) -> list[tuple[object, ...]]:
    db = await Database.open(url)
    threads = CountingThreads()
    core = Orchestrator(parse_config(CONFIG), db, InstantModels(), threads=threads)
    _, start_seconds, start_stall = await watched(core.start)
    heap.freeze_start_up()  # as the bot does once started, before its reconciliation
    _, reconcile_seconds, reconcile_stall = await watched(core.reconcile_bindings)
    routes = core.core.bindings.routes  # the core's own map, as a thread message asks it
    while db.listening(NOTICES) is not None and routes._sessions is None:  # PostgreSQL: until it follows the table
        await asyncio.sleep(0.01)
    ids = [random.randint(1, bindings * 2) for _ in range(lookups)]
    known = {thread_id: "session" for thread_id in range(1, bindings + 1)}
    store_times, dict_times = [], []
    for thread_id in ids:
        started = time.perf_counter()
        await routes.session_of(thread_id)
        store_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        known.get(thread_id)
        dict_times.append(time.perf_counter() - started)
    heap.thaw()
    await core.close()
    await db.close()
    p50, p99, floor99 = (percentile(store_times, 50), percentile(store_times, 99), percentile(dict_times, 99))
    ms = 1000
    return [
        (store, "bindings: start-up", f"{start_seconds:.2f} s", "≤ 2 s", "", verdict(start_seconds <= 2)),
        (store, "bindings: start-up stall", f"{start_stall * ms:.1f} ms", "≤ 100 ms", "", verdict(start_stall <= 0.1)),
        (
            store,
            "bindings: reconcile",
            f"{threads.requests} request{'' if threads.requests == 1 else 's'}",
            "1 (one server)",
            f"{threads.requests}×",
            verdict(threads.requests <= 1),
        ),
        (
            store,
            "bindings: reconcile wall",
            f"{reconcile_seconds:.2f} s",
            f"stall {reconcile_stall * ms:.0f} ms",
            "",
            "",
        ),
        (store, "bindings: route p50", f"{p50 * ms:.3f} ms", "", "", ""),
        (
            store,
            "bindings: route p99",
            f"{p99 * ms:.3f} ms",
            f"{floor99 * ms:.4f} / 0.1 ms",
            f"{p99 / floor99:.0f}×",
            verdict(p99 <= 0.0001),
        ),
    ]


async def main(bindings: int, lookups: int, fresh: BenchStores, usable: list[str]) -> None:
    configure_logging("warning", "console")  # the bot logs at info; here only what goes wrong
    print(f"bindings={bindings} lookups={lookups}")
    print(TARGETS.header())
    for store in usable:
        url = fresh.fresh(store, f"bindings-{store}")
        await filled(url, bindings)
        for row in await measure(store, url, bindings, lookups):
            print(TARGETS.row(*row))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bindings", type=int, default=100_000)
    parser.add_argument("--lookups", type=int, default=5000)
    parser.add_argument("--stores", default=",".join(STORES))
    args = parser.parse_args()
    with bench_stores(args.stores.split(",")) as (bench, usable):  # a PostgreSQL server starts outside the loop
        asyncio.run(main(args.bindings, args.lookups, bench, usable))
