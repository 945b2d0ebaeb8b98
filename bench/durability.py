"""What durable runs cost per run: a spawn → delivered announcement with an instant model, five ways in one process.

Run by hand from the repository's root: ``.venv/bin/python -m bench.durability [--runs 50] [--concurrent 200]
[--repeats 3] [--stores sqlite,postgresql]``. Each repeat measures, on a fresh database of each store:

- ``floor``: the bare lifecycle doing the same durable writes (``bench/floor.py``);
- ``floor+agent``: the same with a bare pydantic-ai run of the same model inside;
- ``floor+dbos``: that, each run a DBOS workflow started at once whose one step is the agent's run
  (``bench/journal_floor.py``): the least a run journaled by DBOS costs;
- ``off``: the orchestrator, ``core.spawn`` until the announcement is delivered (``bench/sink.py`` does the delivery
  worker's database work; nothing is posted), with ``[durability] resume_interrupted = false``;
- ``on``: the same with durable runs (the default): each run is a DBOS workflow journaled in ``<file>.dbos``, a
  SQLite file whichever the store (with a PostgreSQL store the bot journals in that database instead).

``--runs`` runs one after another (``sequential``), then ``--concurrent`` runs started at once (the orchestrator's
lane 64 wide). Latency is from a run's spawn (sequential) or from the start of the batch (concurrent) to
its delivery. Printed: the median over repeats of each repeat's p50, p99 and wall time per run. Ratios compare
p50s when sequential and wall time per run when concurrent (the cost of a batch). The model is a FunctionModel that
answers at once, so everything measured is overhead. The machine is shared: compare ratios, not times.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

from bench.floor import CHANNEL_ID, Floor
from bench.journal_floor import journaled
from bench.orchestrator_overhead import InstantModels, answer
from bench.sink import DeliverySink
from bench.stores import STORES, BenchStores, bench_stores
from bench.table import STORE, Column, Table
from bot import heap
from bot.config import DurabilityConfig, StorageConfig, parse_config
from bot.core.durable import journal_store
from bot.core.durable.durable_runs import DurableRuns
from bot.core.orchestrator import Orchestrator
from bot.core.runs.requests import SpawnRequest
from bot.logging_setup import configure_logging
from bot.records import Origin
from storage.db import Database

PATHS = ("floor", "floor+agent", "floor+dbos", "off", "on")
ORIGIN = Origin(user_id=1, channel_id=CHANNEL_ID, conversation="bench:1", guild_id=3)
Lifecycle = Callable[[str], Awaitable["asyncio.Future[float]"]]
"""Starts a task's run and returns once it is accepted, as a slash command's handler returns once its spawn is: with
the future of when its announcement was delivered (``time.perf_counter``)."""

ARRIVALS_PER_TURN = 500


def config_text(queued: int, lane: int = 64) -> str:
    """No cap on a member's live runs (nor on their runs in progress); the sub-agent lane ``lane`` wide (64 unless
    told); room in its queue, and in the one server's share of it, for every run."""
    return (
        "[discord]\nmax_active_runs_per_member = 0\n[budgets]\nmember_concurrent_runs = 0\n"
        '[agents.defaults]\nmodel = "bench/instant"\n'
        f"[agents.defaults.subagents]\nmax_concurrent = {lane}\n"
        f"max_queued = {queued}\nmax_queued_per_server = {queued}\n"
    )


@dataclass(frozen=True)
class Sample:
    latencies: list[float]
    wall: float
    cpu: float = 0.0  # the process's CPU time over the measurement, every thread's (DBOS's included)

    def quantile(self, q: int) -> float:
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[q - 1]

    @property
    def cpu_per_run(self) -> float:
        return self.cpu / len(self.latencies)

    def cost(self, *, at_once: bool) -> float:
        """What ratios compare: the p50 of runs one after another, the wall time per run of a batch."""
        return self.wall / len(self.latencies) if at_once else self.quantile(50)


async def timed(lifecycle: Lifecycle, runs: int, *, concurrent: bool) -> Sample:
    started, cpu = time.perf_counter(), time.process_time()
    if concurrent:
        ends = await arriving(lifecycle, runs)
        return Sample([end - started for end in ends], max(ends) - started, time.process_time() - cpu)
    latencies = []
    for i in range(runs):
        spawned = time.perf_counter()
        latencies.append(await (await lifecycle(f"task {i}")) - spawned)
    return Sample(latencies, time.perf_counter() - started, time.process_time() - cpu)


async def arriving(lifecycle: Lifecycle, runs: int) -> list[float]:
    """The delivery times of ``runs`` runs started at once, as a bot's requests arrive: each start a task of its own,
    ``ARRIVALS_PER_TURN`` of them per turn of the event loop, which ends once its run is accepted. Nothing of the
    bench waits per accepted run but its delivery's future, as nothing of a bot does: a coroutine waiting per run
    would add objects that every full collection walks, and thousands of tasks built in one synchronous call would
    hold the loop; both would be the bench's own cost, which the 10,000 target's ticker charges to the path
    measured."""
    ends: list[float] = []
    all_ended = asyncio.get_running_loop().create_future()
    context = contextvars.copy_context()  # one for every callback: without it each would get a copy of its own

    def fail(error: BaseException) -> None:
        if not all_ended.done():
            all_ended.set_exception(error)

    def ended(delivery: asyncio.Future[float]) -> None:
        if delivery.cancelled():
            fail(asyncio.CancelledError())
            return
        if (error := delivery.exception()) is not None:
            fail(error)
            return
        ends.append(delivery.result())
        if len(ends) == runs and not all_ended.done():
            all_ended.set_result(None)

    async def start(task: str) -> None:
        try:
            delivery = await lifecycle(task)
        except asyncio.CancelledError:
            fail(asyncio.CancelledError())
            raise
        except Exception as error:
            fail(error)
            return
        finally:
            starts.discard(asyncio.current_task())  # not a done callback: one object less per start waiting
        delivery.add_done_callback(ended, context=context)

    if runs == 0:
        return ends
    starts: set[asyncio.Task[None]] = set()
    try:
        for i in range(runs):
            started = asyncio.create_task(start(f"task {i}"))
            starts.add(started)
            if (i + 1) % ARRIVALS_PER_TURN == 0:
                await asyncio.sleep(0)
        await all_ended
    finally:
        for started in list(starts):  # after a failure: no more spawns into a core about to close
            started.cancel()
    return ends


@asynccontextmanager
async def floor_path(
    url: str, *, agent: bool, model: FunctionModel | None = None, journal: str | None = None
) -> AsyncIterator[Lifecycle]:
    """The floor on ``url``; with ``agent``, a bare pydantic-ai run of ``model`` (by default an instant one) in it;
    with ``journal`` (a path, as the core's), each run a DBOS workflow whose one step is that agent's run
    (``bench/journal_floor.py``)."""
    assert agent or journal is None, "a journaled floor's one step is its agent's run"
    model = model or FunctionModel(answer, model_name="instant")
    opened = (
        journaled(url, journal_store.url(DurabilityConfig(), StorageConfig(path=journal)), Agent(model))
        if journal is not None
        else Floor.open(url, Agent(model) if agent else None)
    )
    async with opened as floor:

        async def delivered(task: str) -> float:
            await floor.run(task)
            return time.perf_counter()

        async def lifecycle(task: str) -> asyncio.Future[float]:
            return asyncio.ensure_future(delivered(task))  # the floor: one task per run, from its start to its end

        yield lifecycle


@asynccontextmanager
async def core_path(
    url: str, journal: str | None, queued: int, *, lane: int = 64, model: FunctionModel | None = None
) -> AsyncIterator[Lifecycle]:
    """The orchestrator on ``url``, ``lane`` runs at once, every agent on ``model``.

    ``model`` is an instant one by default. With ``journal`` (a path) its runs are durable, journaled in
    ``journal.dbos``."""
    db = await Database.open(url)
    durable = DurableRuns(DurabilityConfig(), StorageConfig(path=journal)) if journal is not None else None
    core = Orchestrator(parse_config(config_text(queued, lane)), db, InstantModels(model), durable=durable)
    sink = DeliverySink(core, db)
    await core.start()
    sink.start()
    heap.freeze_start_up()  # as the bot does once started

    async def lifecycle(task: str) -> asyncio.Future[float]:
        accepted = await core.spawn(SpawnRequest(agent_id="main", task=task, origin=ORIGIN))
        return sink.delivered(accepted.run_id)

    try:
        yield lifecycle
        await core.core.dispatch.wait_idle()  # a workflow still records its end after its announcement is out
    finally:
        heap.thaw()
        await sink.close()
        await core.close()
        await db.close()


def journal_of(stores: BenchStores, name: str, durable: bool) -> str | None:
    """Where the runs of the measurement ``name`` are journaled; ``None``: they are not."""
    return str(stores.folder / name) if durable else None


def lifecycle_of(
    path: str, stores: BenchStores, store: str, name: str, queued: int
) -> AbstractAsyncContextManager[Lifecycle]:
    url = stores.fresh(store, name)
    if path == "floor":
        return floor_path(url, agent=False)
    if path == "floor+agent":
        return floor_path(url, agent=True)
    if path == "floor+dbos":
        return floor_path(url, agent=True, journal=journal_of(stores, name, True))
    return core_path(url, journal_of(stores, name, path == "on"), queued)


async def measure(args: argparse.Namespace, stores: BenchStores, store: str) -> dict[tuple[str, str], list[Sample]]:
    loads = (("sequential", args.runs, False), (f"{args.concurrent} at once", args.concurrent, True))
    samples: dict[tuple[str, str], list[Sample]] = {}
    for repeat in range(args.repeats):
        for load, runs, concurrent in loads:
            for path in PATHS:
                name = f"{store}-{path}-{concurrent}-{repeat}"
                async with lifecycle_of(path, stores, store, name, runs + args.warmup) as lifecycle:
                    for i in range(args.warmup):
                        await (await lifecycle(f"warm-up {i}"))
                    samples.setdefault((load, path), []).append(await timed(lifecycle, runs, concurrent=concurrent))
    return samples


BASES = ("off", "floor", "floor+agent", "floor+dbos")  # what a path's ratios are taken against
RATIOS = {
    "on": BASES,
    "off": ("floor", "floor+agent"),
    "floor+dbos": ("floor", "floor+agent"),
    "floor+agent": ("floor",),
}
TABLE = Table(
    STORE,
    Column("load", 14, align="<"),
    Column("path", 12, align="<"),
    Column("p50 ms", 9, ".2f"),
    Column("p99 ms", 9, ".2f"),
    Column("ms/run", 9, ".2f"),
    Column("× off", 10),
    Column("× floor", 10),
    Column("× fl+agt", 10),
    Column("× fl+dbos", 10),
)


def rows(store: str, samples: dict[tuple[str, str], list[Sample]]) -> list[str]:
    lines = []
    for (load, path), repeats in samples.items():
        p50 = statistics.median(s.quantile(50) for s in repeats) * 1000
        p99 = statistics.median(s.quantile(99) for s in repeats) * 1000
        per_run = statistics.median(s.wall / len(s.latencies) for s in repeats) * 1000

        def basis(of: str, load: str = load) -> float:
            return statistics.median(s.cost(at_once="at once" in load) for s in samples[(load, of)])

        ratios = (f"{basis(path) / basis(other):.2f}x" if other in RATIOS.get(path, ()) else "" for other in BASES)
        lines.append(TABLE.row(store, load, path, p50, p99, per_run, *ratios))
    return lines


async def main(args: argparse.Namespace, stores: BenchStores, usable: list[str]) -> None:
    configure_logging("warning", "console")  # the bot logs at info; here only what goes wrong
    print(f"runs={args.runs} at once={args.concurrent} repeats={args.repeats} warm-up={args.warmup}")
    print(TABLE.header())
    for store in usable:
        for line in rows(store, await measure(args, stores, store)):
            print(line, flush=True)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.durability", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="runs one after another (default 50)")
    parser.add_argument("--concurrent", type=int, default=200, help="runs started at once (default 200)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of everything; medians are printed")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs before each measurement")
    parser.add_argument("--stores", type=lambda text: text.split(","), default=list(STORES))
    args = parser.parse_args()
    if min(args.runs, args.concurrent) < 2 or args.repeats < 1 or args.warmup < 0:
        parser.error("--runs and --concurrent take at least 2 (a p99 needs two runs), --repeats 1, --warmup 0")
    return args


if __name__ == "__main__":
    options = arguments()
    with bench_stores(options.stores) as (bench, usable):  # a PostgreSQL server starts outside the loop
        asyncio.run(main(options, bench, usable))
