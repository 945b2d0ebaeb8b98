"""How long SQLite's WAL checkpoints stall the event loop on a 1 GB store.

Run by hand from the repository's root: ``.venv/bin/python -m bench.checkpoint_stall [--scale 1.0] [--cache DIR]
[--on-loop]``. The store has the bot's schema (its migrations) and old runs with their sessions, transcripts and
outbox rows, ``--scale`` GB of them, bulk-written outside the loop by a plain connection; with ``--cache`` it is kept
in ``DIR`` and reused by the next run (a copy is measured, so every run starts from the same file). It is then
opened as the bot opens it, and transactions like the bot's run on the loop: each spawns a run (a session, a run, two
transcript messages, an outbox row) and finishes an old one picked at random (its run and outbox rows, pages spread
over the file), enough of them to pass many checkpoints. A ticker (1 ms sleeps) records the loop's stalls; the same
loop with no writes, as long, is the baseline (the table's floor). Goal: the longest stall ≤ 100 ms. ``--on-loop``
measures too, as a second row, the store with SQLite's own checkpoints (inside the commit that passes 1,000 pages of
WAL, on the loop) instead of the store's checkpointer. The machine is shared: compare with the baseline more than
the times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

from bench.stalls import percentile, stalls_while
from bench.stores import BenchStores
from bench.table import TARGETS, verdict
from storage.db import Database
from storage.sqlite import SqliteDatabase

GOAL = 0.100
GIGABYTE = 1 << 30
FILLED = "bench_checkpoint_filled"  # the meta key a finished fill leaves: a half-built cache is built again
BATCH = 2000  # runs per bulk transaction
MESSAGES_PER_RUN = 4
PICKED = 20_000  # old runs the workload finishes, picked at random over the store
Row = tuple[object, ...]


def _message(run: int, turn: int) -> str:
    """A transcript message of about 1.5 KB: a model's request or response, as the bot stores it."""
    kind = "request" if turn % 2 == 0 else "response"
    text = f"turn {turn} of run {run}: " + "the agent's words, a tool's output, a file's lines " * 28
    return json.dumps({"kind": kind, "parts": [{"part_kind": "text", "content": text}], "turn": turn})


def _runs(start: int, count: int, now: float) -> Iterator[tuple[str, str, float]]:
    for n in range(start, start + count):
        yield uuid.uuid4().hex, f"agent:main:subagent:{uuid.uuid4().hex}", now - 86400 * 30 + n * 0.01


def _fill(path: Path, size: int) -> None:
    """Old rows until the file holds ``size`` bytes: a plain connection, no journal, outside the loop."""
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        for pragma in ("journal_mode = DELETE", "journal_mode = OFF", "synchronous = OFF", "cache_size = -200000"):
            connection.execute(f"PRAGMA {pragma}")
        now, written = time.time(), 0
        while path.stat().st_size < size:
            batch = list(_runs(written, BATCH, now))
            connection.execute("BEGIN")
            connection.executemany(
                "INSERT INTO sessions (key, agent_id, kind, role, control_scope, task, guild_id, channel_id, "
                "owner_user_id, created_at) VALUES (?, 'main', 'subagent', 'leaf', 'none', 'an old task', 1, 10, 7, ?)",
                [(key, at) for _, key, at in batch],
            )
            connection.executemany(
                "INSERT INTO runs (id, session_key, kind, status, task, model, guild_id, channel_id, "
                "requester_user_id, created_at, started_at, ended_at, result_text) "
                "VALUES (?, ?, 'spawn', 'running', 'an old task', 'test/model', 1, 10, 7, ?, ?, NULL, NULL)",
                [(run, key, at, at) for run, key, at in batch],
            )
            connection.executemany(
                "INSERT INTO transcript_messages (session_key, run_id, message_json, created_at) VALUES (?, ?, ?, ?)",
                [
                    (key, run, _message(written + i, turn), at)
                    for i, (run, key, at) in enumerate(batch)
                    for turn in range(MESSAGES_PER_RUN)
                ],
            )
            connection.executemany(
                "INSERT INTO outbox (idempotency_key, run_id, channel_id, payload_json, status, next_attempt_at, "
                "created_at) VALUES (?, ?, 10, ?, 'pending', ?, ?)",
                [(f"announce:{run}", run, json.dumps({"content": "done " * 40}), at, at) for run, _, at in batch],
            )
            connection.execute("COMMIT")
            written += BATCH
        connection.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (FILLED, str(size)))
        connection.execute("PRAGMA journal_mode = WAL")


async def store_of(folder: Path, size: int) -> Path:
    """A filled store of ``size`` bytes in ``folder``: the one left there by an earlier run, or a new one."""
    path = folder / f"checkpoint-{size >> 20}MiB.sqlite3"
    if path.exists():
        with closing(sqlite3.connect(path)) as connection:
            if connection.execute("SELECT 1 FROM meta WHERE key = ?", (FILLED,)).fetchone():
                return path
    for stale in folder.glob(f"{path.name}*"):
        stale.unlink()
    db = await Database.open(str(path))
    await db.close()
    await asyncio.to_thread(_fill, path, size)
    return path


async def _spawn_and_finish(db: Database, n: int, old: str, now: float) -> None:
    """One spawn's rows and an old run's end, in transactions as the bot's."""
    run, key = uuid.uuid4().hex, f"agent:main:subagent:{uuid.uuid4().hex}"
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO sessions (key, agent_id, kind, role, control_scope, task, guild_id, channel_id, "
            "owner_user_id, created_at) VALUES (?, 'main', 'subagent', 'leaf', 'none', 'a new task', 1, 10, 7, ?)",
            (key, now),
        )
        await tx.execute(
            "INSERT INTO runs (id, session_key, kind, status, task, model, guild_id, channel_id, requester_user_id, "
            "created_at) VALUES (?, ?, 'spawn', 'queued', 'a new task', 'test/model', 1, 10, 7, ?)",
            (run, key, now),
        )
    async with db.transaction() as tx:
        await tx.executemany(
            "INSERT INTO transcript_messages (session_key, run_id, message_json, created_at) VALUES (?, ?, ?, ?)",
            [(key, run, _message(n, turn), now) for turn in range(2)],
        )
        await tx.execute("UPDATE runs SET status = 'completed', ended_at = ?, result_text = ? WHERE id = ?",
                         (now, "an answer " * 20, run))  # fmt: skip
        await tx.execute(
            "INSERT INTO outbox (idempotency_key, run_id, channel_id, payload_json, next_attempt_at, created_at) "
            "VALUES (?, ?, 10, ?, ?, ?)",
            (f"announce:{run}", run, json.dumps({"content": "done"}), now, now),
        )
    async with db.transaction() as tx:
        await tx.execute("UPDATE runs SET status = 'completed', ended_at = ?, result_text = ? WHERE id = ?",
                         (now, "a late answer " * 20, old))  # fmt: skip
        await tx.execute(
            "UPDATE outbox SET status = 'delivered', delivered_at = ?, parts_sent = 1 WHERE run_id = ?", (now, old)
        )


async def stalls_of(path: Path, spawns: int, *, on_loop: bool) -> tuple[list[float], list[float], str]:
    """The loop's stalls while ``spawns`` spawns write; the bare loop's, as long; what was done."""
    db = await SqliteDatabase.connect(str(path), checkpointer=not on_loop)  # migrated already
    picked = [row[0] for row in await db.fetch_all(f"SELECT id FROM runs ORDER BY random() LIMIT {PICKED}")]

    wal, largest = Path(f"{path}-wal"), 0

    async def workload() -> float:
        nonlocal largest
        started, now = time.perf_counter(), time.time()
        for n in range(spawns):
            await _spawn_and_finish(db, n, picked[n % len(picked)], now)
            largest = max(largest, wal.stat().st_size)
        return time.perf_counter() - started

    try:
        seconds, stalls = await stalls_while(workload)
        _, baseline = await stalls_while(lambda: asyncio.sleep(seconds))
        done = "SQLite's own, in the commits" if on_loop else f"{db.checkpoints} by the checkpointer"
    finally:
        await db.close()
    return (
        stalls,
        baseline,
        f"{spawns} spawns in {seconds:.1f} s, WAL ≤ {largest / (1 << 20):.1f} MiB, checkpoints: {done}",
    )


async def measure(stores: BenchStores, store: str, scale: float, cache: Path | None = None) -> list[Row]:
    """The target's rows (SQLite only): the longest stall, and the 99th percentile against the bare loop's."""
    measured, _ = await rows(cache or stores.folder, scale, on_loop=False)
    return measured


async def rows(folder: Path, scale: float, *, on_loop: bool) -> tuple[list[Row], str]:
    """The rows of one measurement, and what it did."""
    size = round(GIGABYTE * scale)
    cached = await store_of(folder, size)
    gigabytes = f"{size / GIGABYTE:g} GB"
    label = f"SQLite's own checkpoints, {gigabytes}" if on_loop else f"SQLite WAL checkpoint, {gigabytes} store"
    with tempfile.TemporaryDirectory(prefix="tb-checkpoint-", dir=folder) as work:
        path = Path(work) / "store.sqlite3"
        await asyncio.to_thread(shutil.copyfile, cached, path)
        stalls, baseline, what = await stalls_of(path, max(200, round(6000 * scale)), on_loop=on_loop)
    worst, p99, bare99 = max(stalls), percentile(stalls, 99), percentile(baseline, 99)
    return [
        ("sqlite", f"{label}: stall", f"{worst * 1000:.0f} ms", f"{max(baseline) * 1000:.0f} ms / ≤ 100 ms",
         "", verdict(worst <= GOAL)),
        ("sqlite", f"{label}: p99", f"{p99 * 1000:.2f} ms", f"{bare99 * 1000:.2f} ms / reported", "", ""),
    ], f"{label}: {what}"  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    print(TARGETS.header())
    folder = args.cache or Path(tempfile.mkdtemp(prefix="tb-checkpoint-"))
    try:
        for on_loop in (False, True) if args.on_loop else (False,):
            measured, what = await rows(folder, args.scale, on_loop=on_loop)
            for row in measured:
                print(TARGETS.row(*row), flush=True)
            print(f"  ({what})")
    finally:
        if args.cache is None:
            shutil.rmtree(folder)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.checkpoint_stall", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="the store's size in GB (default 1.0)")
    parser.add_argument("--cache", type=Path, help="a folder to keep the filled store in between runs")
    parser.add_argument("--on-loop", action="store_true", help="also measure SQLite's own checkpoints, on the loop")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(arguments()))
