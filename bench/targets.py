"""The performance targets in one command, each with a verdict.

Each is measured beside its floor or ideal in the same run. Run by hand from the repository's root:
``.venv/bin/python -m bench.targets [--scale 1.0] [--stores sqlite]``. ``--scale`` multiplies every count (0.1 for
a quick look; the verdicts are for 1.0). Per store, with durable runs on (the default) and the delivery sink of
``bench/sink.py`` (the delivery worker's database work, no Discord):

- overhead, one after another: a spawn → delivered announcement with an instant model, p50 against DBOS's least
  (``bench/journal_floor.py``: the floor of ``bench/floor.py`` plus a bare pydantic-ai run, each run a one-step DBOS
  workflow: what a run DBOS journals cannot cost less than); goal ≤ 1.3×, and p99 ≤ 3× p50; every path measured
  three times, in turn, and each figure the median round;
- overhead, 2,000 at once: wall time per run against DBOS's least's; goal ≤ 1.3×, p99 ≤ 3× p50; and the CPU time
  per run (the process's, every thread's: DBOS's too) beside DBOS's least's own; goal ≤ 10 ms;
- lane-bound: 1,000 runs through a lane of 8, the model answering after 50 ms, against the floor plus an agent
  through a lane as wide; goal ≤ 1.2×; both reported against the ideal (runs / lane × 50 ms), and, with durable runs
  on, the core against DBOS's least through as wide a lane;
- 10,000 at once, the model answering after 100 ms, three times, each in a process of its own: the loop's longest
  stall in each (a 1 ms ticker; goal ≤ 100 ms in every one), the median wall time against DBOS's least for 10,000
  (goal ≤ 1.5×), and memory per queued run (as many spawned through a lane of 1 whose run waits: Python's heap growth
  over the runs queued; goal ≤ 5 KiB), and per run in flight (as many through a lane as wide, each waiting inside its
  model request; reported). The lane is as wide as the runs (10,000 at scale 1.0), as the target names it; the floor
  has no lane;
- bindings: ``bench/bindings.py`` with 100,000 bindings;
- SQLite's WAL checkpoints: ``bench/checkpoint_stall.py``, the loop's longest stall while spawns write to a 1 GB
  store (goal ≤ 100 ms), on SQLite only; ``--cache DIR`` keeps that store between runs;
- announcements over the wire: ``bench/wire_announcements.py``, 200 spawns (at any scale) across 10 channels (the
  real bot, in a process of its own, against the tests' fake Discord, the model answering after 0.5 s), each
  announcement's arrival after its run's end; goal p99 ≤ 0.5 s (on SQLite whatever ``--stores``).

``--only overhead,many`` measures those targets only (of ``overhead``, ``lane-bound``, ``many``, ``bindings``,
``checkpoints``, ``wire``): the verdicts of the issue are for one run of all of them.

``--durable off`` runs the targets that run runs with the core's durable runs off, against the floor plus an agent
instead of DBOS's least: where the core stands without DBOS. With durable runs on, each overhead target also reports
DBOS's least against the floor plus an agent.

Runs "at once" arrive as a bot's requests do (``bench.durability.arriving``): 500 per turn of the event loop, each
caller done once its run is accepted, as a slash command's handler is; the floor's runs arrive the same way. The
machine is shared: compare ratios more than times.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import tracemalloc
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bench.bindings import filled, watched
from bench.bindings import measure as bindings_measure
from bench.checkpoint_stall import measure as checkpoint_measure
from bench.durability import Lifecycle, Sample, core_path, floor_path, journal_of, timed
from bench.stores import STORES, BenchStores, bench_stores
from bench.table import TARGETS, verdict
from bench.wire_announcements import measure as wire_measure
from bot.logging_setup import configure_logging
from storage.db import Database

T = TypeVar("T")
Row = tuple[object, ...]
Measure = Callable[[BenchStores, str, float], Awaitable[list[Row]]]  # (stores, store, scale) → its rows


def answering_after(latency: float) -> FunctionModel:
    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(latency)
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(answer, model_name=f"after-{latency}s")


def scaled(count: int, scale: float) -> int:
    return max(2, round(count * scale))


ROUNDS = 3


def median_sample(samples: list[Sample], *, at_once: bool) -> Sample:
    """The round whose cost is the median (its latencies, wall and CPU time together)."""
    return sorted(samples, key=lambda sample: sample.cost(at_once=at_once))[len(samples) // 2]


async def overhead(stores: BenchStores, store: str, scale: float, *, durable: bool) -> list[Row]:
    """The core's overhead against its floor: DBOS's least with durable runs (a run DBOS journals cannot cost less),
    else the floor plus an agent. With 2,000 at once, also the CPU time per run, beside the floor's own.

    Each path is measured ``ROUNDS`` times, every path in turn in each round, and each figure is the median over the
    rounds: on a shared machine one sample a path would compare two moments as much as two paths."""
    rows: list[Row] = []
    floor_path_name = "floor+dbos" if durable else "floor+agent"
    for runs, at_once in ((scaled(200, scale), False), (scaled(2000, scale), True)):
        load = f"{runs:,} at once" if at_once else f"{runs:,} one by one"
        rounds: dict[str, list[Sample]] = {}
        for round_ in range(ROUNDS):
            for path in ("floor+agent", "floor+dbos", "core") if durable else ("floor+agent", "core"):
                name = f"overhead-{path}-{at_once}-{round_}"
                url = stores.fresh(store, name)
                lifecycle = (
                    core_path(url, journal_of(stores, name, durable), runs + 5)
                    if path == "core"
                    else floor_path(url, agent=True, journal=journal_of(stores, name, path == "floor+dbos"))
                )
                async with lifecycle as run:
                    for i in range(5):
                        await (await run(f"warm-up {i}"))
                    rounds.setdefault(path, []).append(await timed(run, runs, concurrent=at_once))
        samples = {path: median_sample(taken, at_once=at_once) for path, taken in rounds.items()}
        core, least = samples["core"], samples[floor_path_name]
        cost, base = core.cost(at_once=at_once), least.cost(at_once=at_once)
        what = "ms/run" if at_once else "p50"
        tail = core.quantile(99) / core.quantile(50)
        rows += [
            (store, f"overhead {load}", f"{cost * 1000:.2f} ms {what}",
             f"{base * 1000:.2f} ms {'DBOS' if durable else 'floor'} / ≤ 1.3×", f"{cost / base:.2f}×",
             verdict(cost / base <= 1.3)),
            (store, f"overhead {load}: p99/p50", f"{tail:.1f}×", "≤ 3×", "", verdict(tail <= 3)),
        ]  # fmt: skip
        if durable:  # against the bare agent too: what DBOS's journal and the core add together
            bare = samples["floor+agent"].cost(at_once=at_once)
            rows.append(
                (store, f"overhead {load}: DBOS's least", f"{base * 1000:.2f} ms {what}",
                 f"{bare * 1000:.2f} ms floor", f"{base / bare:.2f}×", ""),
            )  # fmt: skip
        if at_once:
            mine, floors = core.cpu_per_run * 1000, least.cpu_per_run * 1000
            rows.append(
                (store, f"CPU per {'durable ' if durable else ''}run", f"{mine:.2f} ms",
                 f"{floors:.2f} ms {'DBOS' if durable else 'floor'} / ≤ 10 ms", f"{mine / floors:.2f}×",
                 verdict(mine <= 10)),
            )  # fmt: skip
    return rows


async def lane_bound(stores: BenchStores, store: str, scale: float, *, durable: bool) -> list[Row]:
    """The core's runs through a lane of 8, against the floor's.

    The floor is the floor plus an agent, its lane a semaphore: what the lifecycle's own work adds to the ideal
    before the core adds anything. The floor's lane holds a run's
    whole lifecycle, its first and last commits too, which the core's lane does not (two of its five): if anything,
    the floor's row reads a little high. Both are reported against the ideal (runs / lane × the model's latency); with
    durable runs, the core against DBOS's least through as wide a lane too (the floor with each run a workflow)."""
    runs, lane, latency = scaled(1000, scale), 8, 0.05
    model = answering_after(latency)
    url, journal = stores.fresh(store, "lane-bound"), journal_of(stores, "lane-bound", durable)
    async with core_path(url, journal, runs, lane=lane, model=model) as run:
        sample = await timed(run, runs, concurrent=True)
    async with floor_path(stores.fresh(store, "lane-bound-floor"), agent=True, model=model) as floor_run:
        floor = await timed(through_lane(floor_run, lane), runs, concurrent=True)
    rows = []
    if durable:  # DBOS's least through as wide a lane: what the lane costs once every run is a workflow
        name = "lane-bound-least"
        logged = journal_of(stores, name, True)
        async with floor_path(stores.fresh(store, name), agent=True, model=model, journal=logged) as least_run:
            least = await timed(through_lane(least_run, lane), runs, concurrent=True)
        rows += [  # DBOS's least against the floor: the least a durable run's lane-bound can read
            (store, f"lane-bound {runs} runs: DBOS's least", f"{least.wall:.2f} s", f"{floor.wall:.2f} s floor",
             f"{least.wall / floor.wall:.2f}×", ""),
            (store, f"lane-bound {runs} runs: against DBOS's least", f"{sample.wall:.2f} s",
             f"{least.wall:.2f} s DBOS", f"{sample.wall / least.wall:.2f}×", ""),
        ]  # fmt: skip
    ideal = runs / lane * latency
    ratio = sample.wall / floor.wall
    return [
        (store, f"lane-bound {runs} runs, lane {lane}", f"{sample.wall:.2f} s", f"{floor.wall:.2f} s floor / ≤ 1.2×",
         f"{ratio:.2f}×", verdict(ratio <= 1.2)),
        *rows,
        (store, f"lane-bound {runs} runs: against the ideal", f"{sample.wall / ideal:.2f}×",
         f"floor's {floor.wall / ideal:.2f}×", "", ""),
    ]  # fmt: skip


def through_lane(lifecycle: Lifecycle, width: int) -> Lifecycle:
    """``lifecycle`` with at most ``width`` runs at a time, the others waiting their turn."""
    lane = asyncio.Semaphore(width)

    async def laned(task: str) -> float:
        async with lane:
            return await (await lifecycle(task))

    async def start(task: str) -> asyncio.Future[float]:
        return asyncio.ensure_future(laned(task))

    return start


async def many_at_once(stores: BenchStores, store: str, scale: float, *, durable: bool) -> list[Row]:
    """10,000 runs at once, three times: the loop's longest stall in each, and the median wall time against DBOS's
    least for as many (the floor plus an agent, without durable runs); then memory per queued and per in-flight run.

    Each of the four measurements runs in a process of its own, as the bot runs alone in its own: a process that has
    just run 10,000 at once leaves its heap spread over memory it freed, and the next one's full collections walk
    their objects more slowly."""
    runs, latency = scaled(10_000, scale), 0.1
    name = "many-floor"
    floor_wall, _ = await in_own_process(
        many_once, stores.fresh(store, name), journal_of(stores, name, durable), runs, latency, floor=True
    )
    walls: list[float] = []
    stalls: list[float] = []
    for attempt in range(3):
        name = f"many-core-{attempt}"
        wall, stall = await in_own_process(
            many_once, stores.fresh(store, name), journal_of(stores, name, durable), runs, latency, floor=False
        )
        walls.append(wall)
        stalls.append(stall)
    per_queued = await memory_per_run(stores, store, runs, lane=1, durable=durable)
    in_flight = await memory_per_run(stores, store, runs, lane=runs, durable=durable)
    wall = statistics.median(walls)
    ratio, least = wall / floor_wall, "DBOS" if durable else "floor"
    return [
        (store, f"{runs} at once: stall, each of 3", " / ".join(f"{s * 1000:.0f}" for s in stalls) + " ms",
         "≤ 100 ms", "", verdict(max(stalls) <= 0.1)),
        (store, f"{runs} at once: wall (median of 3)", f"{wall:.1f} s", f"{floor_wall:.1f} s {least} / ≤ 1.5×",
         f"{ratio:.2f}×", verdict(ratio <= 1.5)),
        (store, f"{runs} at once: per queued", f"{per_queued / 1024:.1f} KiB", "≤ 5 KiB", "",
         verdict(per_queued <= 5 * 1024)),
        (store, f"{runs} at once: per in flight", f"{in_flight / 1024:.1f} KiB", "reported", "", ""),
    ]  # fmt: skip


def many_once(url: str, journal: str | None, runs: int, latency: float, *, floor: bool) -> tuple[float, float]:
    """In a process of its own: ``runs`` at once on the floor's path or the core's, their wall time and the loop's
    longest stall (a 1 ms ticker on either)."""
    configure_logging("warning", "console")

    async def measure() -> tuple[float, float]:
        model = answering_after(latency)
        opened = (
            floor_path(url, agent=True, model=model, journal=journal)
            if floor
            else core_path(url, journal, runs, lane=runs, model=model)
        )
        async with opened as run:
            sample, _, stall = await watched(partial(timed, run, runs, concurrent=True))
        return sample.wall, stall

    return asyncio.run(measure())


async def in_own_process(work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``work(*args, **kwargs)`` in a new Python process.

    The process is spawned, not forked: it inherits nothing of this one's heap."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as process:
        return await asyncio.get_running_loop().run_in_executor(process, partial(work, *args, **kwargs))


async def memory_per_run(stores: BenchStores, store: str, runs: int, *, lane: int, durable: bool) -> float:
    """Memory per waiting run: ``runs`` spawned at once through a lane of ``lane`` whose runs wait inside their model
    request, the growth of Python's heap (``tracemalloc``: resident memory says nothing in a process whose heap has
    room from earlier work) from before the spawns, over the runs held (the bench's own part included: a
    future per run accepted, a task per spawn not yet).
    A lane of 1 holds all but one queued; a lane as wide as the runs holds every one in flight."""
    release = asyncio.Event()
    entered = 0

    async def waiting(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal entered
        entered += 1
        await release.wait()
        return ModelResponse(parts=[TextPart("done")])

    url, journal = stores.fresh(store, f"memory-{lane}"), journal_of(stores, f"memory-{lane}", durable)
    async with core_path(url, journal, runs, lane=lane, model=FunctionModel(waiting, model_name="waiting")) as run:
        probe = await Database.open(url)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        spawning = asyncio.ensure_future(timed(run, runs, concurrent=True))
        while entered < lane or await count(probe, "SELECT COUNT(*) FROM runs WHERE status = 'queued'") < runs - lane:
            await asyncio.sleep(0.05)
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        await probe.close()
        release.set()
        await spawning
    return grown / (runs - 1 if lane == 1 else runs)


async def count(db: Database, sql: str) -> int:
    row = await db.fetch_one(sql)
    assert row is not None
    return int(row[0])


async def bindings(stores: BenchStores, store: str, scale: float) -> list[Row]:
    count = scaled(100_000, scale)
    url = stores.fresh(store, "bindings")
    await filled(url, count)
    return await bindings_measure(store, url, count, 5000)


async def main(args: argparse.Namespace, stores: BenchStores, usable: list[str]) -> None:
    """Every target; with ``--durable off`` only those that run runs, the core without DBOS (bindings, checkpoints and
    the wire do not change with it: the wire's bot keeps its default, durable runs)."""
    configure_logging("warning", "console")  # the bot logs at info; here only what goes wrong
    print(f"scale={args.scale} durable runs={'on' if args.durable else 'off'}")
    print(TARGETS.header())
    runs: dict[str, Measure] = {name: partial(measure, durable=args.durable) for name, measure in RUNS.items()}
    checkpoints: Measure = partial(checkpoint_measure, cache=args.cache)
    for store in usable:
        measures: dict[str, Measure] = {
            **runs,
            "bindings": bindings,
            **({"checkpoints": checkpoints} if store == "sqlite" else {}),
        }
        for name, measure in (measures if args.durable else runs).items():
            if name in args.only:
                for row in await measure(stores, store, args.scale):
                    print(TARGETS.row(*row), flush=True)
    if args.durable and "wire" in args.only:
        for row in await wire_measure(200, 10, 0.5):  # the target's count at any scale: a minute or two
            print(TARGETS.row(*row), flush=True)


RUNS: dict[str, Callable[..., Awaitable[list[Row]]]] = {
    "overhead": overhead, "lane-bound": lane_bound, "many": many_at_once
}  # fmt: skip
ONLY = (*RUNS, "bindings", "checkpoints", "wire")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.targets", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every count (default 1.0)")
    parser.add_argument("--stores", type=lambda text: text.split(","), default=["sqlite"], help=f"of {STORES}")
    parser.add_argument(
        "--durable",
        choices=("on", "off"),
        default="on",
        help="the core's runs journaled by DBOS (on, the default: what the targets measure) or not (where the core "
        "stands without DBOS)",
    )
    parser.add_argument(
        "--only", type=lambda text: text.split(","), default=list(ONLY), help=f"these targets only, of {ONLY}"
    )
    parser.add_argument("--cache", type=Path, help="a folder to keep the 1 GB SQLite store of the checkpoint target in")
    options = parser.parse_args()
    options.durable = options.durable == "on"
    return options


if __name__ == "__main__":
    options = arguments()
    with bench_stores(options.stores) as (bench, usable):  # a PostgreSQL server starts outside the loop
        asyncio.run(main(options, bench, usable))
