"""A model request that streams its text as written, yet answers as one response.

Everything around a request (the journal's step, the budget meter, the fallback chain, redaction) keeps seeing one
``ModelResponse``; only the innermost request streams, when a run asked for its text as it is written. The sink is
told at every piece of text and handed a function that gives the response's whole text so far, never a delta, so
a fallback candidate starting over, or a replay, simply shows shorter text. The text is only put together when the
function is called (by whoever shows it, at its own pace): a piece costs its own length, however long the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic_ai.messages import ModelMessage, ModelResponse, PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

SoFar = Callable[[], str]  # the response's text so far, put together when called
TextSink = Callable[[SoFar], None]  # told at every piece of text; must not block

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
    pieces: dict[int, list[str]] = {}  # each text part's pieces, by the part's index

    def so_far() -> str:
        return "".join("".join(pieces[index]) for index in sorted(pieces))

    async with model.request_stream(messages, model_settings, parameters) as stream:
        async for event in stream:
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                pieces[event.index] = [event.part.content]
            elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                pieces.setdefault(event.index, []).append(event.delta.content_delta)
            else:
                continue
            sink(so_far)
        return stream.get()
