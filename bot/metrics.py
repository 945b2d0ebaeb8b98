"""The bot's Prometheus metrics, on a registry of its own, for operators' dashboards.

Every bot object holds one :class:`Metrics` (two bots in one process never share a series). The parts that count
(the model candidates, the delivery worker, the store's reader in :mod:`bot.metrics_service`) are handed it; this
module imports nothing of the project, so the agent runtime may use it without reaching the core. Labels are bounded:
agents, statuses, providers and models come from the config or a fixed set, never from what a member types, and
models past :data:`MAX_MODEL_LABELS` are counted as ``other``.
"""

from __future__ import annotations

from decimal import Decimal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

MAX_MODEL_LABELS = 64  # distinct provider/model pairs counted by name; more are counted as "other"
OTHER = "other"
LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)
STALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
# the samples each kind of metric exports, after its family's name
_SAMPLES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_count", "_sum", "_created"), "gauge": ("",)}


class Metrics:
    """The metric objects, registered on their own :class:`CollectorRegistry` with the process's collectors."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        self.runs = Gauge(
            "threadbound_runs",
            "Live runs, and runs that ended in the last 15 minutes, by agent and status",
            ["agent", "status"],
            registry=registry,
        )
        self.runs_started = Counter(
            "threadbound_runs_started", "Runs that started (read from the store)", ["agent"], registry=registry
        )
        self.runs_ended = Counter(
            "threadbound_runs_ended",
            "Runs that ended, by outcome (read from the store)",
            ["agent", "outcome"],
            registry=registry,
        )
        self.lane_in_use = Gauge(
            "threadbound_lane_in_use", "Sub-agent runs running in the lane", ["lane"], registry=registry
        )
        self.lane_queued = Gauge(
            "threadbound_lane_queued", "Sub-agent runs waiting for a place in the lane", ["lane"], registry=registry
        )
        self.lane_capacity = Gauge(
            "threadbound_lane_capacity", "Places in the lane (max_concurrent)", ["lane"], registry=registry
        )
        self.model_latency = Histogram(
            "threadbound_model_request_seconds",
            "Model requests' latency, by provider and model",
            ["provider", "model"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.model_errors = Counter(
            "threadbound_model_request_errors",
            "Model requests that failed, by provider, model and reason",
            ["provider", "model", "reason"],
            registry=registry,
        )
        self.model_tokens = Counter(
            "threadbound_model_tokens",
            "Tokens of model requests, by provider, model and direction",
            ["provider", "model", "direction"],
            registry=registry,
        )
        self.model_cost = Counter(
            "threadbound_model_cost_dollars",
            "What model requests cost (USD; priced requests only)",
            ["provider", "model"],
            registry=registry,
        )
        self.delivery_lag = Histogram(
            "threadbound_delivery_lag_seconds",
            "Announcements' delivery after they were written (delivered - created)",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.delivery_retries = Counter(
            "threadbound_delivery_retries", "Announcement deliveries scheduled again after a failure", registry=registry
        )
        self.approvals_waiting = Gauge(
            "threadbound_approvals_waiting", "Tool-call approvals waiting for a decision", registry=registry
        )
        self.loop_stall = Gauge(
            "threadbound_event_loop_stall_seconds",
            "The event loop's longest lateness in the last interval",
            registry=registry,
        )
        self.loop_lateness = Histogram(
            "threadbound_event_loop_lateness_seconds",
            "How late the event loop ran a tick",
            buckets=STALL_BUCKETS,
            registry=registry,
        )
        self.heartbeat_age = Gauge(
            "threadbound_executor_heartbeat_age_seconds",
            "Seconds since each process's last heartbeat",
            ["executor"],
            registry=registry,
        )
        self._models: set[tuple[str, str]] = set()

    def names(self) -> set[str]:
        """Every sample name the registry exports, or will once a series has a value.

        A counter's ``_total``, a histogram's ``_bucket`` and so on, after its family's name."""
        families = list(self.registry.collect())
        return {sample.name for family in families for sample in family.samples} | {
            family.name + suffix for family in families for suffix in _SAMPLES.get(family.type, ("",))
        }

    def _model(self, reference: str) -> tuple[str, str]:
        """``provider/model`` as two labels; past :data:`MAX_MODEL_LABELS` pairs, the model is ``other``."""
        provider, _, model = reference.partition("/")
        if (provider, model) not in self._models:
            if len(self._models) >= MAX_MODEL_LABELS:
                return provider, OTHER
            self._models.add((provider, model))
        return provider, model

    def model_answered(
        self, reference: str, seconds: float, input_tokens: int, output_tokens: int, cost: Decimal | None
    ) -> None:
        """One model request that answered: its latency, tokens, and cost when known."""
        provider, model = self._model(reference)
        self.model_latency.labels(provider, model).observe(seconds)
        self.model_tokens.labels(provider, model, "input").inc(input_tokens)
        self.model_tokens.labels(provider, model, "output").inc(output_tokens)
        if cost is not None:
            self.model_cost.labels(provider, model).inc(float(cost))

    def model_failed(self, reference: str, seconds: float, reason: str) -> None:
        """One model request that failed; ``reason`` is a word of a fixed set (``http_500``, ``timeout`` …)."""
        provider, model = self._model(reference)
        self.model_latency.labels(provider, model).observe(seconds)
        self.model_errors.labels(provider, model, reason).inc()
