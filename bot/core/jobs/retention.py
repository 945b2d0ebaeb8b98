"""Retention: passes that delete what ``[retention]`` lets go, so the database does not grow without bound.

A pass prunes, for each kind whose days are not 0: sessions archived before the cutoff with everything hanging off them
(leaves first: a tree goes over successive batches); transcript rows of runs that ended before the cutoff, of any
session — a main session's history then starts later, at a run's first message — and, by the same days, a conversation's
old turns themselves (its main session lives on); finished outbox rows; agents' memories stored before the cutoff
(``memory_days``); and, with durable runs, the journal of workflows that ended (``journal_days``). It deletes
``batch_size`` rows per transaction, each of which queues for the write lock (first come, first served) behind the
writes of live runs that wait for it, so those take their turn between batches. On
SQLite a batch runs on the event loop's thread (``storage/sqlite.py``): a batch stalls the loop briefly, and
``bench/retention_stall.py`` measures how long. Usage totals live elsewhere (``usage_daily``) and are never pruned; the
audit log keeps pruned run ids.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog
from apscheduler.triggers.interval import IntervalTrigger

from bot.core.context import CoreContext
from bot.core.durable.durable_runs import DurableRuns

log = structlog.get_logger(__name__)
DAY = 86_400.0

Batch = Callable[[float, int], Awaitable[Counter[str]]]


@dataclass
class PassReport:
    """What one pass deleted, in how many batches, and how long it took.

    Deleted rows are counted per table. The longest batch is kept too, its wait for the write lock included."""

    deleted: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    longest_batch: float = 0.0
    seconds: float = 0.0


class Retention:
    def __init__(self, ctx: CoreContext, durable: DurableRuns | None = None) -> None:
        self._ctx = ctx
        config, repository = ctx.config.retention, ctx.repos.retention
        self._passing = asyncio.Lock()
        self._kinds: list[tuple[int, Batch]] = [
            (config.archived_sessions_days, repository.prune_sessions),
            (config.transcripts_days, repository.prune_transcripts),
            (config.transcripts_days, repository.prune_turns),
            (config.outbox_days, repository.prune_outbox),
            (config.memory_days, repository.prune_memories),
        ]
        if durable is not None:
            self._kinds.append((config.journal_days, durable.prune))

    def start(self) -> None:
        """A pass now, then every ``interval_minutes``; none at all when every kind is kept forever."""
        if not any(days for days, _ in self._kinds):
            log.info("retention_off")
            return
        self._ctx.signals.background(self._pass())
        trigger = IntervalTrigger(minutes=self._ctx.config.retention.interval_minutes)
        self._ctx.timers.recurring("retention", trigger, self._launch)

    async def _launch(self) -> None:
        """Start a pass as background work, so closing the core stops it.

        The batch in progress then rolls back."""
        self._ctx.signals.background(self._pass())

    async def _pass(self) -> None:
        """A pass, unless the last one still goes.

        The last one may still go after a long first pass over a big backlog, or with a short interval. Passes at once
        would each queue a batch ahead of a live write, multiplying its wait."""
        if self._passing.locked():
            log.info("retention_pass_skipped")
            return
        async with self._passing:
            await self.prune()

    async def prune(self) -> PassReport:
        """One pass over every kind; a kind that fails is logged and the next one still goes (say, a table added
        later with a foreign key this pass does not know stops sessions, not transcripts)."""
        report = PassReport()
        started = time.perf_counter()
        now = self._ctx.clock()
        for days, batch in self._kinds:
            if days == 0:
                continue
            try:
                await self._prune_kind(batch, now - days * DAY, report)
            except Exception:
                log.exception("retention_kind_failed", kind=batch.__name__, deleted=dict(report.deleted))
        report.seconds = time.perf_counter() - started
        log.info(
            "retention_pass",
            deleted=dict(report.deleted),
            batches=report.batches,
            longest_batch_ms=round(report.longest_batch * 1000, 1),
            seconds=round(report.seconds, 3),
        )
        return report

    async def _prune_kind(self, batch: Batch, cutoff: float, report: PassReport) -> None:
        while True:
            batch_started = time.perf_counter()
            deleted = +await batch(cutoff, self._ctx.config.retention.batch_size)  # + drops tables with 0 rows
            report.longest_batch = max(report.longest_batch, time.perf_counter() - batch_started)
            if not deleted:
                return
            report.deleted.update(deleted)
            report.batches += 1
