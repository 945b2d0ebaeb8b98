"""A run's trace: one span per execution of a run, its model requests and tool calls beneath it.

The span is started where the run executes: inside its DBOS workflow (whose span is then its parent and the trace's
root) or in a task of its own. Either starts outside any caller's context (dispatch's supervisor task), so a
sub-agent's run is a trace of its own; it names its requester's session. A run woken (children settled, approvals
decided) or resumed after a restart executes again: a new span, in a new trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import TracerProvider
from pydantic_ai.models.instrumented import InstrumentationSettings

from bot.config import TracingConfig
from bot.records import Run, Session

SPAN = "threadbound.run"


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
    def execution(self, run: Run, session: Session, *, woken: bool) -> Iterator[None]:
        """The span of one execution of ``run``, current while it lasts.

        A crash in it is recorded on it."""
        if self._tracer is None:
            yield
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
        with self._tracer.start_as_current_span(SPAN, attributes=attributes):
            yield
