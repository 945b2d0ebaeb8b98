"""A model request that streams its text as written, yet answers as one response.

Everything around a request (the journal's step, the budget meter, the fallback chain, redaction) keeps seeing one
``ModelResponse``; only the innermost request streams, when a run asked for its text as it is written. The text
handed on is the response's whole text so far, never a delta, so a fallback candidate starting over, or a replay,
simply shows shorter text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic_ai.messages import ModelMessage, ModelResponse, PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

TextSink = Callable[[str], None]  # the response's text so far; must not block

_sink: ContextVar[TextSink | None] = ContextVar("threadbound_text_sink", default=None)


@contextmanager
def streaming_to(sink: TextSink | None) -> Iterator[None]:
    """Requests made inside hand their text to ``sink`` as it arrives (``None``: they do not stream)."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


async def requested(
    model: Model,
    messages: list[ModelMessage],
    model_settings: ModelSettings | None,
    parameters: ModelRequestParameters,
) -> ModelResponse:
    """``model``'s response to ``messages``, streamed to the current sink when there is one."""
    sink = _sink.get()
    if sink is None:
        return await model.request(messages, model_settings, parameters)
    texts: dict[int, str] = {}
    async with model.request_stream(messages, model_settings, parameters) as stream:
        async for event in stream:
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                texts[event.index] = event.part.content
            elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                texts[event.index] = texts.get(event.index, "") + event.delta.content_delta
            else:
                continue
            sink("".join(texts[index] for index in sorted(texts)))
        return stream.get()
