"""Executors: the bot processes sharing one store, each under a stable executor id, and the janitor that hands a dead
one's runs on.

Open-source DBOS recovers at launch only the workflows of its own executor id, has no heartbeats and no leases, and two
live processes on one id take each other's workflows. So each process holds a ``processes`` row under its executor id
and beats it every ``heartbeat_seconds``:

- at start a process refuses an executor id whose holder is alive (heartbeat younger than ``lease_seconds``; on this
  host, a pid that still runs), waits while a janitor is recovering it, and otherwise takes the row over and settles
  what its own previous life left (runs it owned, and runs no process owns: rows from before executor ids);
- at every beat it also looks for processes whose heartbeat is older than the lease. Exactly one live process
  claims each (one conditional UPDATE), resumes its pending workflows through DBOS's public API (back to the queue
  each came from, or DBOS's internal queue: they run on whichever live process takes them, which then owns the
  run), settles its other live runs ``interrupted`` as a restart would (but the runs still waiting in a queue: any
  process takes them), and deletes its row.

A process found claimed while alive (silent past the lease: stalled, or its database unreachable) stops executing its
runs at once — the janitor hands them to live processes, and two executions of one run would make its model requests
and tool calls twice — and registers again, a process with no runs in hand.

A process that closes cleanly ends its heartbeat at once, so a live process takes its runs over without waiting
for the lease (or it takes them back itself if it starts again first).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import replace

import structlog

from bot.core.context import CoreContext
from bot.core.durable.dispatch import RunDispatch
from bot.core.durable.durable_runs import run_of
from bot.core.durable.live_at_start import left_live, lost_starts
from bot.core.runs.settlement import AfterCommit, Settlement
from storage.processes import ProcessRow

log = structlog.get_logger(__name__)


class ExecutorTaken(Exception):
    """Another live process holds this process's executor id (said in one line)."""


def runs_here(pid: int) -> bool:
    """Whether a process with this pid runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Executors:
    def __init__(
        self,
        ctx: CoreContext,
        settlement: Settlement,
        apply: Callable[[AfterCommit], None],
        shards: str | None,
        dispatch: RunDispatch,
    ) -> None:
        """``shards``: the Discord shards this process runs (shown in its row); ``dispatch``: where its runs execute
        (with DBOS, if runs are workflows: a dead process's are then resumed, not settled)."""
        self.executor_id = ctx.config.durability.executor_id
        self._ctx = ctx
        self._settlement = settlement
        self._apply = apply
        self._dispatch = dispatch
        self._durable = dispatch.durable_runs
        self._me = ProcessRow(self.executor_id, os.getpid(), socket.gethostname(), shards, 0.0, 0.0, None)
        self._beating: asyncio.Task[None] | None = None

    async def register(self) -> None:
        """Hold this process's executor id, or raise :class:`ExecutorTaken` if a live process holds it."""
        processes, lease = self._ctx.repos.processes, self._ctx.config.durability.lease_seconds
        while True:
            now = self._ctx.clock()
            me = replace(self._me, started_at=now, heartbeat_at=now)
            seen = await processes.get(self.executor_id)
            async with self._ctx.repos.db.transaction() as tx:
                if seen is None and await processes.insert(tx, me):
                    break
                if seen is None:
                    continue
                expired = seen.heartbeat_at < now - lease
                if seen.claimed_by is not None and not expired:
                    log.info("executor_being_recovered", executor_id=self.executor_id, by=seen.claimed_by)
                elif expired or (seen.host == me.host and (seen.pid == me.pid or not runs_here(seen.pid))):
                    if await processes.take_over(tx, seen, me):
                        break
                    continue
                else:
                    raise ExecutorTaken(
                        f"executor id {self.executor_id!r} is held by a live process (pid {seen.pid} on {seen.host}, "
                        f"heartbeat {now - seen.heartbeat_at:.0f}s ago): give each process its own [durability] "
                        "executor_id or --shards"
                    )
            await asyncio.sleep(self._ctx.config.durability.heartbeat_seconds)
        log.info("executor_registered", executor_id=self.executor_id, pid=me.pid, host=me.host, shards=me.shards)

    async def start(self, launch: Callable[[], Awaitable[set[str]]]) -> None:
        """Hold this process's executor id, take over what its previous life left, then beat.

        The runs it resumes go to ``launch``; the rest of what its previous life left, and runs no process owns, are
        settled. Then it beats and watches for dead processes."""
        await self.register()
        await self._settle(self.executor_id, await launch(), or_nobody=True)
        self._beating = asyncio.create_task(self._beat_forever(), name="executor-heartbeat")

    async def _settle(self, executor_id: str, resuming: set[str], *, or_nobody: bool) -> None:
        """Settle what ``executor_id`` left live, but the runs ``resuming`` and those they keep live."""
        kept = await left_live(self._ctx.repos, resuming, executor_id, or_nobody=or_nobody)
        if self._durable is not None:
            again = await lost_starts(self._ctx.repos, self._durable, kept, executor_id, or_nobody=or_nobody)
            restarting = {*resuming, *again.queue, *again.wake}
            kept = await left_live(self._ctx.repos, restarting, executor_id, or_nobody=or_nobody)
            self._apply(again)
        self._apply(await self._settlement.interrupt_leftovers(executor_id, kept, or_nobody=or_nobody))

    async def close(self) -> None:
        """Stop beating, and end the heartbeat now: a live process may take this one's runs over at once."""
        if self._beating is not None:
            self._beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beating
            self._beating = None
        try:  # bounded: with the database gone, the heartbeat just expires after the lease
            async with asyncio.timeout(self._ctx.config.durability.heartbeat_seconds):  # not wait_for: bot.waiting
                await self._stop()
        except Exception as error:
            log.warning("executor_stop_not_recorded", executor_id=self.executor_id, error=repr(error))

    async def _stop(self) -> None:
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.processes.stop(tx, self.executor_id, self._me.pid)

    async def _beat_forever(self) -> None:
        while True:
            await asyncio.sleep(self._ctx.config.durability.heartbeat_seconds)
            try:
                await self.beat()
                await self.sweep()
            except Exception:  # a database hiccup: the next beat tries again, well within the lease
                log.exception("executor_heartbeat_failed", executor_id=self.executor_id)

    async def beat(self) -> None:
        async with self._ctx.repos.db.transaction() as tx:
            alive = await self._ctx.repos.processes.beat(tx, self.executor_id, self._me.pid, self._ctx.clock())
        if not alive:
            lease = self._ctx.config.durability.lease_seconds
            log.error(
                "executor_claimed_while_alive",
                executor_id=self.executor_id,
                hint=f"a heartbeat came later than lease_seconds ({lease:g}); raise it",
            )
            self._dispatch.abandon()
            await self.register()

    async def sweep(self) -> list[str]:
        """Claim and recover every process whose heartbeat expired; the executor ids this process recovered."""
        return [dead.executor_id for dead in await self.expired() if await self.take(dead)]

    async def expired(self) -> list[ProcessRow]:
        """The other processes whose heartbeat (or whose claimer's) is older than the lease."""
        return await self._ctx.repos.processes.expired(
            self._ctx.clock() - self._ctx.config.durability.lease_seconds, but=self.executor_id
        )

    async def take(self, dead: ProcessRow) -> bool:
        """Claim a process seen dead and recover it; False if another process claimed it first or it came back."""
        async with self._ctx.repos.db.transaction() as tx:
            if not await self._ctx.repos.processes.claim(tx, dead, self.executor_id, self._ctx.clock()):
                return False
        await self._recover(dead)
        return True

    async def _recover(self, dead: ProcessRow) -> None:
        resuming: list[tuple[str, str | None]] = []
        live: set[str] = set()
        if self._durable is not None:
            async with self._ctx.repos.db.transaction() as tx:  # its runs keep their places, now this process's
                await self._ctx.repos.lane_places.take_over(tx, dead.executor_id)
            resuming = await self._durable.pending_of(dead.executor_id)
            for workflow_id, queue in resuming:
                await self._durable.resume(workflow_id, queue)
            live = await self._durable.unfinished_runs()
        await self._settle(dead.executor_id, {run_of(w) for w, _ in resuming} | live, or_nobody=False)
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.processes.release(tx, dead.executor_id, self.executor_id)
        log.warning(
            "dead_executor_recovered",
            executor_id=dead.executor_id,
            pid=dead.pid,
            host=dead.host,
            resumed=len(resuming),
            silent_for=round(self._ctx.clock() - dead.heartbeat_at, 1),
        )
