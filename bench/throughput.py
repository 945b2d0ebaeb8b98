"""Runs per second with one process and with two sharing one store.

Measured where the model's latency dominates.

Run by hand from the repository's root: ``.venv/bin/python -m bench.throughput [--runs 100] [--latency 0.5]
[--lane 5] [--repeats 2] [--stores sqlite,postgresql] [--durability on|off] [--journals store|shared|own]``. The goal:
two processes do at least 1.7× the runs/s of one on a 2-core machine.

This process serves the model: the tests' fake OpenAI-compatible server (``tests/fakes/openai_server.py``), every
request answered ``--latency`` seconds after it arrives. Each worker is an OS process of its own (``--worker``)
running the real orchestrator and agent runtime — config parsed as the bot's, the model reached over HTTP through the
provider — on the shared store, with the outbox delivered by ``bench/sink.py``, each process its own channel (there
is no Discord: the bench measures what the processes share, the store and the journal, not a gateway). Processes
differ by ``[durability] executor_id`` (two on one id would take over each other's workflows) and share the
durable-runs journal where the bot keeps it by default (``--journals store``: the file next to a SQLite store, the
PostgreSQL store's own database), or one SQLite file (``shared``), or one file each (``own``). They start one at a
time, each warmed up and idle before the next. The workload is ``--runs`` spawns split evenly, each process admitting
its share; with durable runs they wait in one DBOS queue and each process executes whichever it takes, at most
``--lane`` at once (``max_concurrent_per_process``; without durable runs, a process runs what it admitted, its own
``max_concurrent`` lane), so one process's ideal is ``lane / latency`` runs/s. The clock runs
from the moment every worker is ready to the last announcement delivered; every run is then checked completed and
announced once. ``cpu ms/run`` is the workers' CPU time per run (all threads); ``busiest`` is the busiest worker's
CPU time over the wall time: the model is the bound only while the machine's cores are far from busy — two processes
of 20 runs/s each, at what a durable run costs in CPU, need most of two shared cores, hence the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.sink import DeliverySink
from bench.stores import STORES, BenchStores, bench_stores
from bench.table import STORE, Column, Table
from bot.agents.models import ModelFactory
from bot.config import Config, parse_config
from bot.core.durable.durable_runs import DurableRuns
from bot.core.orchestrator import Orchestrator
from bot.core.runs.requests import SpawnRequest
from bot.logging_setup import configure_logging
from bot.records import Origin
from storage.db import Database, is_postgresql
from tests.fakes.openai_server import FakeOpenAI, Step

GOAL = 1.7
WARMUP = 2  # runs each worker does before it says it is ready
KEY_ENV = "TB_BENCH_API_KEY"
TABLE = Table(
    STORE,
    Column("processes", 10),
    Column("runs/s", 9, ".1f"),
    Column("of ideal", 10, ".0%"),
    Column("cpu ms/run", 12, ".1f"),
    Column("busiest", 9, ".0%"),
    Column("split", 9),
)


def worker_config(args: argparse.Namespace) -> Config:
    store = f'url = "{args.store}"' if is_postgresql(args.store) else f'path = "{args.store}"'
    durable = args.durability == "on"  # durable runs share one queue: the lane is then per process, the queue's wide
    per_process = f"max_concurrent = 64\nmax_concurrent_per_process = {args.lane}"
    lane = per_process if durable else f"max_concurrent = {args.lane}"
    return parse_config(f"""
[discord]
max_active_runs_per_member = 0
[budgets]
member_concurrent_runs = 0
[storage]
{store}
[providers.fake]
type = "openai"
base_url = "{args.model_url}"
api_key_env = "{KEY_ENV}"
[agents.defaults]
model = "fake/gpt-4o-mini"
[agents.defaults.subagents]  # the queue cap counts every process's queued runs: out of the way
{lane}
max_queued = 1000000
max_queued_per_server = 1000000
[durability]
resume_interrupted = {str(durable).lower()}
executor_id = "{args.executor}"
{f'system_database = "{args.journal}"' if args.journal else ""}
""")


async def worker(args: argparse.Namespace) -> None:
    """One process: warm up, say ``ready``, wait for ``go`` on stdin, run its share, print what it did as JSON."""
    configure_logging("warning", "console")
    config = worker_config(args)
    durability = config.durability
    db = await Database.open(config.storage.database)
    models = ModelFactory(config.providers, agents=config.agents, pricing=config.pricing)
    durable = DurableRuns(durability, config.storage) if durability.resume_interrupted else None
    core = Orchestrator(config, db, models, durable=durable)
    sink = DeliverySink(core, db, channels={args.channel}, owner=args.executor)
    origin = Origin(user_id=1, channel_id=args.channel, conversation=f"bench:{args.executor}", guild_id=3)

    async def lifecycle(task: str) -> float:
        accepted = await core.spawn(SpawnRequest(agent_id="main", task=task, origin=origin))
        await sink.delivered(accepted.run_id)
        return time.time()

    await core.start()
    sink.start()
    try:
        await asyncio.gather(*(lifecycle(f"warm-up {i}") for i in range(WARMUP)))
        await core.core.dispatch.wait_idle()
        print("ready", flush=True)
        if await asyncio.to_thread(sys.stdin.readline):  # nothing: the bench went away
            cpu = time.process_time()
            delivered = await asyncio.gather(*(lifecycle(f"task {i}") for i in range(args.runs)))
            await core.core.dispatch.wait_idle()
            report = {"runs": args.runs, "last_delivered": max(delivered), "cpu": time.process_time() - cpu}
            print(json.dumps(report), flush=True)
    finally:
        await sink.close()
        await core.close()
        await db.close()


@dataclass(frozen=True)
class Measured:
    runs_per_second: float
    cpu_per_run: float  # seconds of CPU the workers spent per run, all threads
    busiest: float  # the busiest worker's CPU time over the wall time: near 1, the CPU is the bound, not the model
    split: list[int]


async def measure(args: argparse.Namespace, model_url: str, url: str, journal: Path, processes: int) -> Measured:
    """``args.runs`` spawns split across ``processes`` workers on the store at ``url``."""
    await (await Database.open(url)).close()  # migrated before the workers start
    shares = [args.runs // processes + (1 if i < args.runs % processes else 0) for i in range(processes)]
    workers: list[asyncio.subprocess.Process] = []
    try:
        for index, share in enumerate(shares):  # one at a time: a process starting settles others' live runs
            workers.append(await started_worker(args, model_url, url, journal, index, share))
        started = time.time()
        for process in workers:
            assert process.stdin is not None
            process.stdin.write(b"go\n")
            await process.stdin.drain()
        patience = 60 + 5 * args.runs * args.latency / args.lane  # five times one process's ideal, and a minute
        try:
            reports = await asyncio.wait_for(asyncio.gather(*(report_of(process) for process in workers)), patience)
        except TimeoutError:
            raise SystemExit(f"the workers did not finish in {patience:.0f} s") from None
    finally:
        for process in workers:
            if process.returncode is None:
                process.kill()
                await process.wait()
    await check_all_delivered(url, args.runs + WARMUP * processes)
    wall = max(report["last_delivered"] for report in reports) - started
    cpu = [report["cpu"] for report in reports]
    return Measured(args.runs / wall, sum(cpu) / args.runs, max(cpu) / wall, [report["runs"] for report in reports])


async def started_worker(
    args: argparse.Namespace, model_url: str, url: str, journal: Path, index: int, share: int
) -> asyncio.subprocess.Process:
    """A worker process for ``share`` runs, once it says it is ready."""
    chosen = {"store": "", "shared": str(journal), "own": str(journal.with_name(f"{journal.stem}-{index + 1}.dbos"))}
    command = [sys.executable, "-m", "bench.throughput", "--worker", "--store", url, "--journal", chosen[args.journals]]
    command += ["--model-url", model_url, "--runs", str(share), "--lane", str(args.lane), "--channel", str(100 + index)]
    command += ["--executor", f"bench-{index + 1}", "--durability", args.durability]
    pipe = asyncio.subprocess.PIPE
    process = await asyncio.create_subprocess_exec(*command, stdin=pipe, stdout=pipe, env=os.environ | {KEY_ENV: "sk"})
    assert process.stdout is not None
    while (line := await process.stdout.readline()).strip() != b"ready":
        if not line:
            raise SystemExit(f"a worker failed to start (exit {await process.wait()}); its error is above")
    return process


async def report_of(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    report = await process.stdout.readline()
    if await process.wait() != 0 or not report:
        raise SystemExit("a worker failed; its error is above")
    return dict(json.loads(report))


async def check_all_delivered(url: str, expected: int) -> None:
    """Every run completed, each announced once and delivered: a bench of runs that went wrong measures nothing."""
    db = await Database.open(url)
    try:
        completed = await db.fetch_one("SELECT COUNT(*) FROM runs WHERE status = 'completed'")
        delivered = await db.fetch_one("SELECT COUNT(*), COUNT(DISTINCT run_id) FROM outbox WHERE status = 'delivered'")
    finally:
        await db.close()
    assert completed is not None and delivered is not None
    if (completed[0], delivered[0], delivered[1]) != (expected, expected, expected):
        raise SystemExit(f"expected {expected} runs completed and announced once: {completed[0]}, {tuple(delivered)}")


def summary(store: str, results: dict[int, list[Measured]], ideal: float) -> list[str]:
    """A line per number of processes, then two's ratio to one against the goal.

    Each line holds medians of the repeats."""
    medians = {n: statistics.median(m.runs_per_second for m in measured) for n, measured in results.items()}
    lines = []
    for n, measured in results.items():
        cpu = statistics.median(m.cpu_per_run for m in measured) * 1000
        busiest = statistics.median(m.busiest for m in measured)
        split = "/".join(str(share) for share in measured[-1].split)
        lines.append(TABLE.row(store, n, medians[n], medians[n] / (ideal * n), cpu, busiest, split))
    ratio = medians[2] / medians[1]
    lines.append(f"{STORE.cell(store)}two / one {ratio:6.2f}x  {'PASS' if ratio >= GOAL else 'FAIL'} (goal ≥ {GOAL}x)")
    return lines


async def main(args: argparse.Namespace, stores: BenchStores, usable: list[str]) -> None:
    configure_logging("warning", "console")
    ideal = args.lane / args.latency
    latency = f"{args.latency * 1000:.0f} ms"
    print(f"runs={args.runs} latency={latency} lane={args.lane} per process, durability {args.durability}", end="")
    journals = {"store": "journal in the store", "shared": "one journal file", "own": "a journal file each"}
    print(f", {journals[args.journals]}" if args.durability == "on" else "")
    print(f"repeats={args.repeats}; ideal {ideal:.1f} runs/s per process (lane / latency)")
    print(TABLE.header())
    async with FakeOpenAI(default=lambda body: Step.reply("done", delay=args.latency)) as model:
        for store in usable:
            results: dict[int, list[Measured]] = {1: [], 2: []}
            for repeat in range(args.repeats):
                for processes in results:
                    name = f"throughput-{store}-{processes}-{repeat}"
                    url, journal = stores.fresh(store, name), stores.folder / f"{name}.dbos"
                    results[processes].append(await measure(args, model.base_url, url, journal, processes))
            for line in summary(store, results, ideal):
                print(line, flush=True)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.throughput", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="spawns in all, split across the processes")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the model takes to answer")
    parser.add_argument("--lane", type=int, default=5, help="runs at once per process (max_concurrent)")
    parser.add_argument("--repeats", type=int, default=2, help="repeats; medians are printed")
    parser.add_argument("--stores", type=lambda text: text.split(","), default=list(STORES))
    parser.add_argument("--durability", choices=("on", "off"), default="on")
    parser.add_argument(
        "--journals",
        choices=("store", "shared", "own"),
        default="store",
        help="the durable-runs journal where the bot keeps it, one SQLite file, or one file each",
    )
    worker_only = parser.add_argument_group("worker (started by the bench itself)")
    worker_only.add_argument("--worker", action="store_true")
    for option in ("--store", "--journal", "--model-url", "--executor"):
        worker_only.add_argument(option)
    worker_only.add_argument("--channel", type=int)
    args = parser.parse_args()
    if not args.worker and (args.runs < 2 or args.repeats < 1 or args.latency <= 0 or not 1 <= args.lane <= 64):
        parser.error("--runs takes at least 2, --repeats at least 1, --latency more than 0, --lane 1 to 64")
    return args


if __name__ == "__main__":
    options = arguments()
    if options.worker:
        asyncio.run(worker(options))
    else:
        with bench_stores(options.stores) as (bench, usable):  # a PostgreSQL server starts outside the loop
            asyncio.run(main(options, bench, usable))
