"""A run's trace: one span per execution of a run, its model requests and tool calls beneath it.

The span is started where the run executes: inside its DBOS workflow (whose span is then its parent and the trace's
root) or in a task of its own. Either starts outside any caller's context (dispatch's supervisor task), so a
sub-agent's run is a trace of its own; it names its requester's session. A run woken (children settled, approvals
decided) or resumed after a restart executes again: a new span, in a new trace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import Span, StatusCode, TracerProvider
from pydantic_ai.models.instrumented import InstrumentationSettings

from bot.config import TracingConfig
from bot.records import Run, RunStatus, Session

SPAN = "threadbound.run"
FAILED = {RunStatus.FAILED, RunStatus.TIMED_OUT}  # a span of an error (a kill or an interruption is none)
Noting = Callable[[RunStatus], None]  # tells the execution's span how a turn ended


def _ignored(status: RunStatus) -> None:
    """How a turn ended, when nothing traces it."""


def _noting(span: Span) -> Noting:
    def note(status: RunStatus) -> None:
        span.set_attribute("threadbound.status", status.value)
        if status in FAILED:
            span.set_status(StatusCode.ERROR)

    return note


class RunTraces:
    """Runs' spans on the bot's tracer provider, and pydantic-ai's instrumentation on the same one.

    Without a provider (tracing off) neither exists."""

    def __init__(self, provider: TracerProvider | None, config: TracingConfig) -> None:
        self._tracer = provider.get_tracer("threadbound") if provider is not None else None
        # members' words (prompts, answers, tool arguments and results) stay out unless the config lets them in
        content = config.include_content
        self.instrumentation = (
            InstrumentationSettings(
                tracer_provider=provider,
                meter_provider=NoOpMeterProvider(),  # traces only: its token histograms are no metrics of ours
                include_content=content,
                include_binary_content=content,
            )
            if provider is not None
            else None
        )

    @contextmanager
    def execution(self, run: Run, session: Session, *, woken: bool) -> Iterator[Noting]:
        """The span of one execution of ``run``, current while it lasts.

        It yields what notes each turn's end on it (``threadbound.status``: the last one's)."""
        if self._tracer is None:
            yield _ignored
            return
        attributes: dict[str, str | int | bool] = {
            "threadbound.run_id": run.id,
            "threadbound.session_key": session.key,
            "threadbound.agent_id": session.agent_id,
            "threadbound.depth": session.depth,
            "threadbound.woken": woken,
        }
        if session.requester_session_key:
            attributes["threadbound.requester_session_key"] = session.requester_session_key
        with self._tracer.start_as_current_span(SPAN, attributes=attributes) as span:
            yield _noting(span)
