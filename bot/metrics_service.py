"""One bot process's metrics endpoint, and the store's counts it reads on the loop.

``[metrics] listen`` set, the process serves ``/metrics`` (prometheus_client's HTTP server, in a thread of its own,
so a scrape never waits for the event loop), every ``refresh_seconds`` reads the store's counts into the gauges
(runs by agent and status, the sub-agent lane, approvals waiting, each process's heartbeat age) and counts the runs
that started or ended since, and a ticker measures how late the event loop runs. Every process reads the same shared
store, so those gauges and counters are the same in each: a dashboard takes their max().
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from wsgiref.simple_server import WSGIServer

import structlog
from prometheus_client import Counter, Gauge, start_http_server

from bot.config import Config
from bot.metrics import Metrics
from storage.gauges import GaugeRepository, RunMark

log = structlog.get_logger(__name__)

TICK_SECONDS = 0.1  # how often the stall ticker asks to run; its lateness is the loop's stall
MARK_MARGIN_SECONDS = 120.0  # how far before the last look runs that started or ended are looked for again (a
# run's time is taken before its commit, which a busy store may delay)
SUBAGENT_LANE = "subagent"
ENDED_SHOWN_SECONDS = 900.0  # the runs gauge shows every live run, and the runs that ended this recently


class NewMarks:
    """Counts each run once as it appears after the last look (less a margin).

    A run seen is remembered while it is inside what the next look reads again; only runs after ``floor`` (the
    process's start) count at all."""

    def __init__(self, counter: Counter, floor: float, *, outcome: bool) -> None:
        self._counter = counter
        self._floor = floor
        self._last = floor
        self._outcome = outcome
        self._seen: dict[str, float] = {}

    def since(self) -> float:
        return max(self._floor, self._last - MARK_MARGIN_SECONDS)

    def count(self, marks: Iterable[RunMark], now: float) -> None:
        """Count the runs of ``marks`` not counted before; ``now``: when they were read."""
        for mark in marks:
            if mark.run_id in self._seen or mark.at <= self._floor:
                continue
            self._seen[mark.run_id] = mark.at
            labels = (mark.agent, mark.status) if self._outcome else (mark.agent,)
            self._counter.labels(*labels).inc()
        self._last = now
        since = self.since()
        self._seen = {run_id: at for run_id, at in self._seen.items() if at > since}


def _replace(gauge: Gauge, values: dict[tuple[str, ...], float], shown: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """Set ``gauge``'s series to ``values``, removing those ``shown`` before that are gone; the labels now shown."""
    for labels, value in values.items():
        gauge.labels(*labels).set(value)
    for labels in shown - set(values):
        with contextlib.suppress(KeyError):
            gauge.remove(*labels)
    return set(values)


class MetricsService:
    def __init__(
        self, metrics: Metrics, gauges: GaugeRepository, config: Config, clock: Callable[[], float] = time.time
    ) -> None:
        self._metrics = metrics
        self._gauges = gauges
        self._config = config
        self._clock = clock
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._tasks: list[asyncio.Task[None]] = []
        now = clock()
        self._started = NewMarks(metrics.runs_started, now, outcome=False)
        self._ended = NewMarks(metrics.runs_ended, now, outcome=True)
        self._runs_shown: set[tuple[str, ...]] = set()
        self._heartbeats_shown: set[tuple[str, ...]] = set()
        self._stall = 0.0

    async def start(self) -> None:
        """Serve the endpoint, start the refresh and the ticker; nothing without ``listen``."""
        address = self._config.metrics.address
        if address is None:
            return
        host, port = address
        try:
            self._server, self._thread = start_http_server(port, host, registry=self._metrics.registry)
        except OSError as error:  # the bot goes on without its endpoint: metrics are no reason to stop serving people
            log.error("metrics_listen_failed", listen=self._config.metrics.listen, error=str(error))
            return
        log.info("metrics_serving", listen=self._config.metrics.listen)
        self._tasks = [
            asyncio.create_task(self._refreshing(), name="metrics-refresh"),
            asyncio.create_task(self._ticking(), name="metrics-ticker"),
        ]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._server is not None:
            server, thread = self._server, self._thread
            self._server = self._thread = None
            await asyncio.to_thread(server.shutdown)  # waits for the serving thread's poll to end
            server.server_close()
            if thread is not None:
                await asyncio.to_thread(thread.join)

    async def refresh(self) -> None:
        """Read the store's counts into the metrics once."""
        metrics, gauges, now = self._metrics, self._gauges, self._clock()
        runs = await gauges.runs_by_agent_and_status(ended_since=now - ENDED_SHOWN_SECONDS)
        self._runs_shown = _replace(metrics.runs, {key: float(n) for key, n in runs.items()}, self._runs_shown)
        lane = await gauges.lane()
        metrics.lane_in_use.labels(SUBAGENT_LANE).set(lane.running)
        metrics.lane_queued.labels(SUBAGENT_LANE).set(lane.queued)
        metrics.lane_capacity.labels(SUBAGENT_LANE).set(self._config.agents.defaults.subagents.max_concurrent)
        metrics.approvals_waiting.set(await gauges.approvals_waiting())
        ages: dict[tuple[str, ...], float] = {
            (executor,): max(0.0, now - at) for executor, at in (await gauges.heartbeats()).items()
        }
        self._heartbeats_shown = _replace(metrics.heartbeat_age, ages, self._heartbeats_shown)
        self._started.count(await gauges.started_since(self._started.since()), now)
        self._ended.count(await gauges.ended_since(self._ended.since()), now)
        metrics.loop_stall.set(self._stall)
        self._stall = 0.0

    async def _refreshing(self) -> None:
        while True:
            try:
                await self.refresh()
            except Exception:
                log.exception("metrics_refresh_failed")
            await asyncio.sleep(self._config.metrics.refresh_seconds)

    async def _ticking(self) -> None:
        """Ask to run every :data:`TICK_SECONDS`; how much later than asked it runs is the loop's stall."""
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time() + TICK_SECONDS
            await asyncio.sleep(TICK_SECONDS)
            late = max(0.0, loop.time() - asked)
            self._metrics.loop_lateness.observe(late)
            self._stall = max(self._stall, late)
