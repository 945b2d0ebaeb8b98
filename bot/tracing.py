"""OpenTelemetry traces: a tracer provider sending spans over OTLP/HTTP, when ``[tracing]`` names a collector.

Off (no ``otlp_endpoint``, the default), nothing is built: no provider, no exporter thread, no span anywhere. On, the
bot's provider batches spans to ``<otlp_endpoint>/v1/traces``; the core starts each run's span on it and hands it to
pydantic-ai's instrumentation (model requests, tool calls). DBOS traces through the process's global provider, which
can be set only once in a process: :data:`RELAY` is set there, and sends every span it is asked for to the provider
of the bot that started last (a process runs one bot; the tests run several, one after another). Libraries tracing
through the global provider (DBOS, MCP's client) so land in the same traces as the run that called them.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import structlog
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, NoOpTracer, Span, SpanKind, Tracer
from opentelemetry.util.types import Attributes

from bot.config import TracingConfig

if TYPE_CHECKING:
    from opentelemetry.util._decorator import _AgnosticContextManager  # the API's own return type

log = structlog.get_logger(__name__)
CLOSE_SECONDS = 3.0  # what a close waits for the last spans to be sent


class _RelayTracer(Tracer):
    """A tracer that starts each span on the provider active at that moment.

    Not the one active when it was made: libraries keep the tracer they got at import, while the provider behind it
    changes with the bot."""

    def __init__(self, relay: Relay, name: str, version: str | None, schema_url: str | None) -> None:
        self._relay, self._name, self._version, self._schema_url = relay, name, version, schema_url

    def _tracer(self) -> Tracer:
        provider = self._relay.active
        if provider is None:
            return NoOpTracer()
        return provider.get_tracer(self._name, self._version, self._schema_url)

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        return self._tracer().start_span(
            name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception
        )

    def start_as_current_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> _AgnosticContextManager[Span]:
        return self._tracer().start_as_current_span(
            name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception, end_on_exit
        )


class Relay(trace.TracerProvider):
    """The process's global tracer provider: the active bot's, or none (spans that go nowhere)."""

    def __init__(self) -> None:
        self._providers: list[TracerProvider] = []

    @property
    def active(self) -> TracerProvider | None:
        return self._providers[-1] if self._providers else None

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> Tracer:
        return _RelayTracer(self, instrumenting_module_name, instrumenting_library_version, schema_url)

    def attach(self, provider: TracerProvider) -> None:
        """Send the global provider's spans to ``provider``; set as the global provider the first time."""
        if trace.get_tracer_provider() is not self:
            trace.set_tracer_provider(self)  # refused (with a warning) when something set one before
        if trace.get_tracer_provider() is not self:
            log.warning("tracing_global_provider_taken", hint="DBOS's and MCP's spans go to the provider set before")
        self._providers.append(provider)

    def detach(self, provider: TracerProvider) -> None:
        if provider in self._providers:
            self._providers.remove(provider)


RELAY = Relay()


class Tracing:
    """The bot's tracer provider and its exporter, from start to a flushed shutdown."""

    def __init__(self, config: TracingConfig) -> None:
        resource = Resource.create({SERVICE_NAME: config.service_name})
        self.provider = TracerProvider(resource=resource)
        # the exporter reads headers (a collector's key) from OTEL_EXPORTER_OTLP_HEADERS, never from the config file
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=config.traces_url)))
        RELAY.attach(self.provider)
        log.info("tracing_started", endpoint=config.traces_url, service_name=config.service_name)

    @classmethod
    def of(cls, config: TracingConfig) -> Tracing | None:
        """The bot's tracing, when the config names a collector; else ``None`` (nothing built)."""
        return cls(config) if config.otlp_endpoint else None

    async def close(self) -> None:
        """Send the spans still batched, then stop the exporter; a collector that does not answer in
        :data:`CLOSE_SECONDS` loses them (logged), rather than holding the bot's close up.

        The export is a blocking HTTP call (retried while the collector is down), made in a daemon thread: the
        collector may be served by this very loop, and the process's exit does not wait for it."""
        RELAY.detach(self.provider)
        loop = asyncio.get_running_loop()
        done = asyncio.Event()

        def shut_down() -> None:
            try:
                self.provider.shutdown()
            finally:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
                    loop.call_soon_threadsafe(done.set)

        threading.Thread(target=shut_down, name="tracing-close", daemon=True).start()
        try:
            async with asyncio.timeout(CLOSE_SECONDS):  # not wait_for: see bot.waiting
                await done.wait()
        except TimeoutError:
            log.warning("tracing_spans_not_sent", reason=f"the collector did not answer within {CLOSE_SECONDS:g}s")
