"""Which models a provider serves, kept a few minutes: its own list (``GET /models``).

Without it a model the provider does not serve is accepted, runs, and fails later with the provider's 404;
asking the list first refuses it before anything starts, naming what is served. The list is a cache of the
provider's answer, not state, so it lives in memory. A provider that cannot say (no list: 404/405/501;
unreachable, slow, or any other error) is trusted: the check helps the person asking, and must never be the
reason a working model is refused or a spawn hangs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from openai import APIError, APIStatusError, AsyncOpenAI

from bot.agents.models import ModelFactory
from bot.text import quoted

CACHE_SECONDS = 300.0
LIST_TIMEOUT_SECONDS = 5.0
NO_LIST_STATUSES = frozenset({404, 405, 501})
SHOWN_MODELS = 20

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class _Listing:
    fetched_at: float
    served: frozenset[str] | None
    """``None``: the provider gave no list, so every model is trusted."""


class ModelCatalog:
    """Asks each OpenAI-compatible provider for its model list.

    It asks through the SDK client the provider's models already use. Only OpenAI-compatible providers are asked.
    Anthropic is trusted: its list names dated model ids, not the aliases people write (``claude-sonnet-4-5``), so
    it would refuse models that work. The offline model (no provider configured) is trusted as well.
    """

    def __init__(self, models: ModelFactory, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._models = models
        self._clock = clock
        self._listings: dict[str, _Listing] = {}  # one per configured provider

    async def refusal(self, reference: str) -> str | None:
        """Why ``reference`` cannot be used, or ``None``.

        It cannot when its provider lists its models and this one is not among them. Asked before the model is
        built, so a refused name costs nothing that stays."""
        client = self._models.listing_client(reference)
        if client is None:
            return None
        provider, _, name = reference.partition("/")
        served = await self._served(provider, client)
        # Ollama lists "llama3.2:latest" for the model everyone calls "llama3.2".
        if served is None or name in served or f"{name}:latest" in served:
            return None
        return _not_served(reference, provider, served)

    async def _served(self, provider: str, client: AsyncOpenAI) -> frozenset[str] | None:
        now = self._clock()
        listing = self._listings.get(provider)
        if listing is None or now - listing.fetched_at >= CACHE_SECONDS:
            listing = _Listing(now, await _ask(provider, client))
            self._listings[provider] = listing
        return listing.served


async def _ask(provider: str, client: AsyncOpenAI) -> frozenset[str] | None:
    """The provider's model ids, or ``None`` when it gives no usable list.

    ``None`` is logged once per cache period."""
    try:
        listing = client.with_options(timeout=LIST_TIMEOUT_SECONDS, max_retries=0).models.list()
        served = frozenset([model.id async for model in listing])
    except APIStatusError as exc:
        report = log.info if exc.status_code in NO_LIST_STATUSES else log.warning
        report("model_list_unavailable", provider=provider, reason=f"HTTP {exc.status_code}", trusted=True)
        return None
    except APIError as exc:
        log.warning("model_list_unavailable", provider=provider, reason=type(exc).__name__, trusted=True)
        return None
    if not served:
        log.info("model_list_unavailable", provider=provider, reason="empty list", trusted=True)
        return None
    return served


def _not_served(reference: str, provider: str, served: frozenset[str]) -> str:
    shown = quoted(reference)
    names = sorted(served)
    listed = ", ".join(names[:SHOWN_MODELS])
    if len(names) > SHOWN_MODELS:
        listed += f", … (first {SHOWN_MODELS} of {len(names)})"
    return f"Unknown model '{shown}': provider {provider!r} serves {listed}."
