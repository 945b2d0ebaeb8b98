"""How long a retention pass over 100k old rows stalls the event loop.

It is compared with the same loop with no pass running. Run by hand from the repository's root, as a module (it
builds its database with the test's helper): ``.venv/bin/python -m bench.retention_stall [trees] [history]``. The
database is the one the retention test builds (``tests/retention_data.py``: ``trees`` archived session trees of 42
rows, ``history`` old turns of a main session of 6 rows, all due). A ticker sleeps 1 ms in a loop and records each
gap beyond it: the stall other tasks (gateway heartbeats, live runs) would see. The goal is a longest stall under
100 ms; the machine is shared, so compare the ratio to the bare baseline more than the times.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.stalls import ticker
from bot.config import parse_config
from bot.core.context import CoreContext
from bot.core.jobs.retention import PassReport, Retention
from bot.core.signals import Signals
from bot.core.timers import Timers
from bot.redaction import Redactor
from storage.db import Database
from storage.repositories import Repositories
from tests.retention_data import NOW, busy

GOAL = 0.100


async def measured(work: asyncio.Future[PassReport] | float) -> tuple[list[float], PassReport | None]:
    """The ticker's stalls while ``work`` runs.

    ``work`` is a pass, or a bare sleep of that many seconds."""
    stalls: list[float] = []
    stop = asyncio.Event()
    ticking = asyncio.create_task(ticker(stalls, stop))
    await asyncio.sleep(0)
    report: PassReport | None = None
    if isinstance(work, asyncio.Future):
        report = await work
    else:
        await asyncio.sleep(work)
    stop.set()
    await ticking
    return stalls, report


def line(name: str, stalls: list[float]) -> str:
    return f"{name:<22} stall median {statistics.median(stalls) * 1000:7.2f} ms   max {max(stalls) * 1000:7.2f} ms"


async def main(trees: int, history: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = await Database.open(str(Path(folder) / "bench.sqlite3"))
        rows = busy(trees, history)
        await rows.write(db)
        config = parse_config("")
        ctx = CoreContext(config, Repositories.over(db), lambda: NOW, Signals(time.time), Timers(), Redactor.of(config))
        retention = Retention(ctx)
        stalls, report = await measured(asyncio.ensure_future(retention.prune()))
        baseline, _ = await measured(report.seconds if report else 1.0)
        await db.close()
    assert report is not None
    worst, bare = max(stalls), max(baseline)
    print(f"rows in database       {rows.total()}")
    print(f"rows deleted           {report.deleted.total()}  {dict(report.deleted)}")
    longest = report.longest_batch * 1000
    print(f"pass                   {report.seconds:.2f} s in {report.batches} batches, longest {longest:.1f} ms")
    print(line("during the pass", stalls))
    print(line("bare loop (baseline)", baseline))
    print(f"ratio max pass / bare  {worst / bare:7.1f}x")
    print(f"{'PASS' if worst < GOAL else 'FAIL'}: longest stall {worst * 1000:.1f} ms (goal < {GOAL * 1000:.0f} ms)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000, int(sys.argv[2]) if len(sys.argv) > 2 else 3000))
