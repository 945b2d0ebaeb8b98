"""An in-process delivery sink, for timing spawn → delivered announcement without Discord.

It does the delivery worker's database work for each announcement (``bot/discord_adapter/delivery.py``: wake on the
core's outbox signal, each channel's oldest pending row first, mark it delivered with its one part recorded, tell
the core) and leaves out only the post to Discord. ``delivered(run_id)`` is a future of when a run's announcement
was marked delivered (``time.perf_counter``). Rows are claimed as the worker claims them (``owner``, the
process's executor id); processes sharing a store each deliver their own channels only (``channels``), so each
process's ``delivered`` hears of its own runs. Those may execute in another process (durable runs share one queue),
whose outbox signal is not heard here: the sink also looks every 20 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from bot.core.orchestrator import Orchestrator
from bot.waiting import wait_set
from storage.db import Database
from storage.outbox import OutboxRepository, OutboxRow

CLAIM_SECONDS = 60.0
LOOK_AGAIN_SECONDS = 0.02  # a run this process queued may execute in another one, whose outbox signal is not heard here


class DeliverySink:
    def __init__(
        self, core: Orchestrator, db: Database, channels: set[int] | None = None, *, owner: str = "local"
    ) -> None:
        self._core = core
        self._owner = owner
        self._channels = channels
        self._db = db
        self._outbox = OutboxRepository(db)
        self._wake = asyncio.Event()
        self._waiting: dict[str, asyncio.Future[float]] = {}  # asked for, not delivered yet
        self._delivered_at: dict[str, float] = {}  # delivered, not asked for yet
        self._task: asyncio.Task[None] | None = None
        core.add_outbox_listener(self._wake.set)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="bench-delivery-sink")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def delivered(self, run_id: str) -> asyncio.Future[float]:
        """When ``run_id``'s announcement is marked delivered (``time.perf_counter``). The sink forgets a run once
        both have happened: 10,000 runs leave nothing behind."""
        future = asyncio.get_running_loop().create_future()
        if (at := self._delivered_at.pop(run_id, None)) is not None:
            future.set_result(at)
        else:
            self._waiting[run_id] = future
        return future

    async def _loop(self) -> None:
        while True:
            await wait_set(self._wake, LOOK_AGAIN_SECONDS)
            self._wake.clear()
            for channel_id, _due in await self._outbox.heads():
                if self._channels is not None and channel_id not in self._channels:
                    continue
                while (row := await self._claim(channel_id)) is not None:
                    await self._deliver(row)

    async def _claim(self, channel_id: int) -> OutboxRow | None:
        now = time.time()
        return await self._outbox.claim_head(channel_id, self._owner, now, now + CLAIM_SECONDS)

    async def _deliver(self, row: OutboxRow) -> None:
        async with self._db.transaction() as tx:  # its one part recorded with the delivered mark, as the worker does
            await self._outbox.mark_delivered(tx, row.id, time.time(), 1, [row.id])
        if row.run_id is not None:
            at = time.perf_counter()  # marked delivered: where the floor's run ends; the core's follow-up comes after
            if (waiting := self._waiting.pop(row.run_id, None)) is not None:
                if not waiting.done():  # its caller may have stopped waiting (a timeout)
                    waiting.set_result(at)
            else:
                self._delivered_at[row.run_id] = at
            await self._core.announcement_delivered(row.run_id)
