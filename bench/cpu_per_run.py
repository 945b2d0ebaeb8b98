"""Where a durable run's CPU time goes: by thread, and by package on the loop's thread.

Run by hand from the repository's root: ``.venv/bin/python -m bench.cpu_per_run [--runs 1000] [--stores sqlite]
[--top 25]``. It spawns ``--runs`` runs at once through the orchestrator with durable runs on (an instant model, the
delivery sink of ``bench/sink.py``), as ``bench.targets``' 2,000 at once does, and prints the CPU time per run: the
process's (every thread), the loop's thread's, and so the rest (DBOS's threads: its journal writes through
``asyncio.to_thread``, its queue workers). Then the loop's thread under ``cProfile``: its own time per package
(``bot``, ``storage``, ``dbos``, ``pydantic_ai``, ``sqlite3``, ``asyncio``…) and the functions that took most. The
profiler slows what it watches: read its shares, not its times, and the first table for the times.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import time
from collections import Counter

from bench.durability import core_path, journal_of, timed
from bench.stores import STORES, BenchStores, bench_stores
from bot.logging_setup import configure_logging


def package_of(filename: str) -> str:
    """The package a profiled function belongs to: ours by folder, a library by its folder in site-packages."""
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1].split("/", 1)[0]
    for ours in ("/bot/", "/storage/", "/bench/", "/cogs/"):
        if ours in filename:
            return ours.strip("/")
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins"  # C functions: sqlite3's calls, the loop's selector, hashing…
    return filename.rsplit("/", 1)[-1].removesuffix(".py") if "/lib/python" in filename else "other"


async def measure(stores: BenchStores, store: str, runs: int, top: int) -> None:
    name = f"cpu-{store}"
    url, journal = stores.fresh(store, name), journal_of(stores, name, True)
    async with core_path(url, journal, runs + 5, lane=runs) as run:
        for i in range(5):
            await (await run(f"warm-up {i}"))
        loop_cpu = time.thread_time()
        sample = await timed(run, runs, concurrent=True)
        loop_cpu = time.thread_time() - loop_cpu
    per_run, on_loop = sample.cpu_per_run * 1000, loop_cpu / runs * 1000
    print(f"{store}: {runs} durable runs at once, {sample.wall:.2f} s")
    print(f"  CPU per run: {per_run:.2f} ms in all, {on_loop:.2f} ms on the loop's thread, "
          f"{per_run - on_loop:.2f} ms on other threads (DBOS's)")  # fmt: skip

    profiler = cProfile.Profile()
    name = f"cpu-{store}-profiled"
    url, journal = stores.fresh(store, name), journal_of(stores, name, True)
    async with core_path(url, journal, runs + 5, lane=runs) as run:
        for i in range(5):
            await (await run(f"warm-up {i}"))
        profiler.enable()
        await timed(run, runs, concurrent=True)
        profiler.disable()
    stats = pstats.Stats(profiler)
    by_package: Counter[str] = Counter()
    for (filename, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        by_package[package_of(filename)] += own
    total = sum(by_package.values())
    print("  the loop's thread, own time by package (profiled):")
    for package, own in by_package.most_common(12):
        print(f"    {package:<24}{own / total:>7.1%}")
    print(f"  the {top} functions with most own time on the loop's thread:")
    stats.sort_stats("tottime").print_stats(top)


async def main(args: argparse.Namespace, stores: BenchStores, usable: list[str]) -> None:
    configure_logging("warning", "console")
    for store in usable:
        await measure(stores, store, args.runs, args.top)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu_per_run", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs spawned at once (default 1000)")
    parser.add_argument("--stores", type=lambda text: text.split(","), default=["sqlite"], help=f"of {STORES}")
    parser.add_argument("--top", type=int, default=25, help="functions listed (default 25)")
    return parser.parse_args()


if __name__ == "__main__":
    options = arguments()
    with bench_stores(options.stores) as (bench, usable):
        asyncio.run(main(options, bench, usable))
