"""A fake OpenTelemetry collector: OTLP/HTTP ``POST /v1/traces`` (protobuf) on 127.0.0.1:<random port>.

It keeps every request's raw bytes (to look for what must never be sent) and every span decoded, flattened to
:class:`ReceivedSpan` (ids as hex, attributes as plain values, the resource's ``service.name``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from tests.polling import eventually


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the collector received it."""

    trace_id: str
    span_id: str
    parent_id: str  # "" for a trace's root
    name: str
    attributes: dict[str, Any]
    service: str
    scope: str  # the instrumentation scope: threadbound, pydantic-ai, dbos-tracer, …
    error: bool  # its status is ERROR


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _value(item.value) for item in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


class FakeCollector:
    """Receives OTLP/HTTP traces; ``spans`` in arrival order, ``bodies`` the raw requests."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.bodies: list[bytes] = []
        self.endpoint = ""
        self._runner: web.AppRunner | None = None
        self._changed = asyncio.Event()

    async def start(self) -> FakeCollector:
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.endpoint = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _traces(self, request: web.Request) -> web.Response:
        body = await request.read()
        if request.content_type != "application/x-protobuf":
            return web.Response(status=415, text=f"not protobuf: {request.content_type}")
        self.bodies.append(body)
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)
        for resource_spans in export.resource_spans:
            resource = {item.key: _value(item.value) for item in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        ReceivedSpan(
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            name=span.name,
                            attributes={item.key: _value(item.value) for item in span.attributes},
                            service=str(resource.get("service.name", "")),
                            scope=scope_spans.scope.name,
                            error=span.status.code == Status.STATUS_CODE_ERROR,
                        )
                    )
        self._changed.set()
        self._changed = asyncio.Event()
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(), content_type="application/x-protobuf"
        )

    def received(self) -> bytes:
        """Every request's bytes, joined: to look for what must never reach a collector."""
        return b"".join(self.bodies)

    def named(self, name: str) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.name == name]

    def of_trace(self, trace_id: str) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.trace_id == trace_id]

    def under(self, ancestor: ReceivedSpan) -> list[ReceivedSpan]:
        """The spans below ``ancestor`` in its trace (children, their children, …)."""
        by_id = {span.span_id: span for span in self.of_trace(ancestor.trace_id)}
        found = []
        for span in by_id.values():
            parent = by_id.get(span.parent_id)
            while parent is not None and parent.span_id != ancestor.span_id:
                parent = by_id.get(parent.parent_id)
            if parent is not None:
                found.append(span)
        return found

    async def wait_for(self, check, *, timeout: float = 10, describe: str) -> Any:
        """The first truthy ``check()``, re-checked as spans arrive."""
        return await eventually(
            check,
            timeout=timeout,
            describe=lambda: f"{describe}; received: {[(s.name, s.trace_id[:8]) for s in self.spans]}",
            changed=lambda: self._changed,
        )
