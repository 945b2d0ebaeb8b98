"""Provider fallback: a run's model is a chain of candidates — the model it asked for, then its agent's
``fallback_models`` — and a request that fails transiently (429, 5xx, no connection) goes to the next one
(pydantic-ai's ``FallbackModel``). A rejected API key (401) is not tried elsewhere: it says which key to check.

Each candidate stamps its responses with the configured ``<provider>/<model>`` that served them (the provider's
own answer names the model ambiguously: a dated id, and ``openai`` for every OpenAI-compatible server) and prices
them at the config's price for it. What reaches the model, the run's error and Discord is worded here, from the
status alone: never a provider's response body, endpoint or key. The details are logged.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import structlog
from pydantic_ai.exceptions import (
    AgentRunError,
    FallbackExceptionGroup,
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from bot.agents.pricing import cost_at
from bot.agents.streaming import requested
from bot.config import ModelPrice
from bot.metrics import Metrics

_TRANSIENT = (ModelConnectionError, ModelRequestTimeout, ModelRateLimitError, ModelUnavailableError, ModelServerError)
SERVED_BY = "served_by"  # the key of a response's metadata naming the candidate that served it
MAX_EVENTS = 8

log = structlog.get_logger(__name__)


class ProviderFailure(AgentRunError):
    """A model failure worded for people, safe to show as it is."""


class KeyRejected(ProviderFailure):
    """The provider rejected the API key (401): every request with it would fail the same way."""


class ChainExhausted(ProviderFailure):
    """Every candidate of the chain failed."""


def transient(error: Exception) -> bool:
    """Whether the next candidate may do better: the provider is rate limited, failing or unreachable. A rejected
    request (bad key, bad input, unknown model) is not retried elsewhere."""
    if isinstance(error, ModelHTTPError):
        return error.status_code == 429 or error.status_code >= 500
    return isinstance(error, _TRANSIENT)


def short_reason(error: BaseException) -> str:
    """What went wrong, from its kind and status only."""
    if isinstance(error, ModelHTTPError):
        if error.status_code == 429:
            return "rate limited (HTTP 429)"
        if error.status_code >= 500:
            return f"server error (HTTP {error.status_code})"
        return f"HTTP {error.status_code}"
    if isinstance(error, ModelTimeoutError | ModelRequestTimeout):
        return "timed out"
    if isinstance(error, ModelConnectionError):
        return "connection failed"
    return type(error).__name__


def error_kind(error: BaseException) -> str:
    """A failed request's reason as a metric label, from a fixed set: ``http_<status>``, ``timeout``,
    ``connection`` or ``other``."""
    if isinstance(error, ModelHTTPError):
        return f"http_{error.status_code}" if 100 <= error.status_code <= 599 else "other"
    if isinstance(error, ModelTimeoutError | ModelRequestTimeout):
        return "timeout"
    if isinstance(error, ModelConnectionError):
        return "connection"
    return "other"


def exhaustion_summary(references: Sequence[str], errors: Sequence[BaseException]) -> str:
    """What the model is told when every candidate of a chain failed.

    Every failure in the order it happened (at most ``MAX_EVENTS``); the wording is a contract with the model."""
    lines = [f"All model providers/models failed after {len(errors)} failure event(s). Events:"]
    events = list(zip(references, errors, strict=False))[:MAX_EVENTS]
    lines += [f"event {k}: {reference}: {short_reason(error)}" for k, (reference, error) in enumerate(events, 1)]
    if len(errors) > MAX_EVENTS:
        lines.append(f"[{len(errors) - MAX_EVENTS} additional failure event(s) omitted]")
    return "\n".join(lines)


def served_by(messages: Sequence[ModelMessage]) -> str | None:
    """The configured model that produced the last response, if a candidate served it."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            served = (message.metadata or {}).get(SERVED_BY)
            return served if isinstance(served, str) else None
    return None


class Candidate(WrapperModel):
    """One configured model of a chain: its responses name it and cost its configured price (else pydantic-ai's
    catalogue prices them); a 401 becomes :class:`KeyRejected` with ``key_hint``. With ``metrics``, each request's
    latency, tokens and cost (or its failure) are counted under its provider and model."""

    def __init__(
        self,
        wrapped: Model,
        reference: str,
        *,
        key_hint: str,
        price: ModelPrice | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        super().__init__(wrapped)
        self.reference = reference
        self.key_hint = key_hint
        self.price = price
        self.metrics = metrics

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        began = time.monotonic()
        try:
            response = await requested(self.wrapped, messages, model_settings, model_request_parameters)
        except ModelAPIError as error:
            if self.metrics is not None:
                self.metrics.model_failed(self.reference, time.monotonic() - began, error_kind(error))
            log.warning("model_request_failed", model=self.reference, reason=short_reason(error), detail=str(error))
            if isinstance(error, ModelHTTPError) and error.status_code == 401:
                raise KeyRejected(f"model provider rejected the API key (401); {self.key_hint}") from error
            raise
        response.metadata = {**(response.metadata or {}), SERVED_BY: self.reference}
        if self.price is not None:
            response.usage.cost = cost_at(self.price, response.usage)
        if self.metrics is not None:
            usage = response.usage
            self.metrics.model_answered(
                self.reference, time.monotonic() - began, usage.input_tokens, usage.output_tokens, usage.cost
            )
        return response


class ModelChain(FallbackModel):
    """Candidates tried in order, each on the transient failure of the one before; when all failed, the run fails
    with :func:`exhaustion_summary` (FallbackModel tries each candidate once, in order, so its errors come in the
    candidates' order)."""

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        super().__init__(*candidates, fallback_on=transient)
        self.references = [candidate.reference for candidate in candidates]

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        try:
            return await super().request(messages, model_settings, model_request_parameters)
        except FallbackExceptionGroup as group:
            raise ChainExhausted(exhaustion_summary(self.references, group.exceptions)) from group


def chain_of(candidates: Sequence[Candidate]) -> Model:
    """What a run calls: its one candidate, or the chain of them."""
    return candidates[0] if len(candidates) == 1 else ModelChain(candidates)
