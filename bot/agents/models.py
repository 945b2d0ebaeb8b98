"""Turns a ``<provider>/<model>`` reference into a pydantic-ai model, and a run's into its chain.

The model is built from the config's providers, with the API key of the agent that uses it; the chain is the one
the run calls (:mod:`bot.agents.fallback`)."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openai import AsyncOpenAI
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.providers import Provider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

from bot.agents.fallback import Candidate, chain_of
from bot.agents.offline import OFFLINE_MODEL_REFERENCE, offline_model
from bot.config import AgentsConfig, ModelPrice, ProviderConfig
from bot.metrics import Metrics
from bot.text import quoted

SDK_MAX_RETRIES = 1
ANTHROPIC_MAX_TOKENS = 8192
KEPT_MODELS = 64
"""Models kept built, the least recently used dropped first. Cheap to build again: a model holds no client of its
own (a provider's models share one per key), so only the clients, one per provider and key, stay for good."""


class UnknownModelError(ValueError):
    """The reference names no configured provider, or is not shaped ``<provider>/<model>``."""


@dataclass(frozen=True)
class ResolvedModel:
    reference: str
    model: Model

    @property
    def supports_thinking(self) -> bool:
        return bool(self.model.profile.get("supports_thinking"))


@dataclass(frozen=True)
class KeySource:
    """Where an agent's key for a provider comes from.

    The environment variable it is read from, and the config key naming that variable."""

    variable: str
    config_key: str


class ModelFactory:
    """Builds one pydantic-ai model per reference and API key, keeping the last :data:`KEPT_MODELS`; with no provider
    at all, the offline model. An agent's own key for a provider (``agents.list.<id>.api_key_env``) wins over the
    provider's; a provider's models with the same key share one client, and models with different keys never do.
    What people type can grow nothing for good: the clients are as many as the config's providers and keys."""

    def __init__(
        self,
        providers: Mapping[str, ProviderConfig],
        environ: Mapping[str, str] | None = None,
        *,
        agents: AgentsConfig | None = None,
        pricing: Mapping[str, ModelPrice] | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``metrics``: where each model request of a chain is counted (none: not counted)."""
        self._providers = dict(providers)
        self._metrics = metrics
        self._environ = os.environ if environ is None else environ
        self._agents = agents or AgentsConfig()
        self._pricing = dict(pricing or {})
        self._cache: OrderedDict[tuple[str, str | None], ResolvedModel] = OrderedDict()
        self._clients: dict[tuple[str, str | None], Provider[Any]] = {}  # (provider, key variable) → its client

    @property
    def kept(self) -> tuple[int, int]:
        """How many models and how many provider clients are kept built now."""
        return len(self._cache), len(self._clients)

    @property
    def offline(self) -> bool:
        return not self._providers

    def resolve(self, reference: str, agent: str | None = None) -> ResolvedModel:
        """The model ``reference`` names, with ``agent``'s key for its provider (the provider's without one)."""
        provider_name, _, model_name = reference.partition("/")
        if not provider_name or not model_name:
            raise UnknownModelError(
                f"Model '{quoted(reference)}' must look like '<provider>/<model>', e.g. 'openai/gpt-4o-mini'."
            )
        if self.offline:
            reference = OFFLINE_MODEL_REFERENCE
        key = self._key_source(provider_name, agent)
        cached = (reference, key.variable if key else None)
        if cached in self._cache:
            self._cache.move_to_end(cached)
        else:
            self._cache[cached] = ResolvedModel(reference, self._build(provider_name, model_name, key))
            if len(self._cache) > KEPT_MODELS:
                self._cache.popitem(last=False)
        return self._cache[cached]

    def listing_client(self, reference: str) -> AsyncOpenAI | None:
        """The client (with the provider's own key) to ask which models ``reference``'s provider serves; ``None``
        when there is no list to ask: offline, an Anthropic provider, or a reference naming no provider (resolving
        it says what is wrong). Builds no model."""
        provider_name, _, model_name = reference.partition("/")
        provider = self._providers.get(provider_name)
        if self.offline or not model_name or provider is None or provider.type != "openai":
            return None
        client = self._client(provider_name, provider, self._key_source(provider_name, None)).client
        return client if isinstance(client, AsyncOpenAI) else None

    def chain(self, reference: str, *, agent: str) -> Model:
        """What a run of ``agent`` on ``reference`` calls: that model, then the agent's fallback models (its own
        list, else the defaults'), each with its configured price and ``agent``'s key."""
        if self.offline:
            return self.resolve(reference).model
        own = self._agents.list[agent].fallback_models if agent in self._agents.list else None
        fallbacks = self._agents.defaults.fallback_models if own is None else own
        return chain_of(
            [
                Candidate(
                    self.resolve(candidate, agent).model,
                    candidate,
                    key_hint=self._key_hint(candidate.partition("/")[0], agent),
                    price=self._pricing.get(candidate),
                    metrics=self._metrics,
                )
                for candidate in dict.fromkeys([reference, *fallbacks])
            ]
        )

    def _key_source(self, provider_name: str, agent: str | None) -> KeySource | None:
        """Where ``agent``'s key for the provider comes from: its own variable, else the provider's, else none."""
        own = self._agents.list[agent].api_key_env if agent in self._agents.list else {}
        if provider_name in own:
            return KeySource(own[provider_name], f"agents.list.{agent}.api_key_env.{provider_name}")
        provider = self._providers.get(provider_name)
        if provider is not None and provider.api_key_env:
            return KeySource(provider.api_key_env, f"providers.{provider_name}.api_key_env")
        return None

    def _key_hint(self, provider_name: str, agent: str) -> str:
        """What to check when the provider rejects the key: the variable, never its value."""
        key = self._key_source(provider_name, agent)
        if key is None:
            return f"no API key is configured for it (set providers.{provider_name}.api_key_env)"
        return f"check the key in {key.variable} ({key.config_key})"

    def _build(self, provider_name: str, model_name: str, key: KeySource | None) -> Model:
        if self.offline:
            return offline_model()
        provider = self._providers.get(provider_name)
        if provider is None:
            raise UnknownModelError(
                f"Unknown model '{quoted(f'{provider_name}/{model_name}')}': no provider named "
                f"'{quoted(provider_name)}' is configured "
                f"(configured: {', '.join(sorted(self._providers))})."
            )
        profile = (
            ModelProfile(supports_thinking=provider.supports_thinking)
            if provider.supports_thinking is not None
            else None
        )
        client = self._client(provider_name, provider, key)
        if provider.type == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModel  # imported with the client, in _client

            return AnthropicModel(
                model_name, provider=client, profile=profile, settings=ModelSettings(max_tokens=ANTHROPIC_MAX_TOKENS)
            )
        return OpenAIChatModel(model_name, provider=client, profile=profile)

    def _client(self, provider_name: str, provider: ProviderConfig, key: KeySource | None) -> Provider[Any]:
        """The SDK provider and its HTTP client for ``provider_name`` with ``key``: built once, shared by models."""
        cached = (provider_name, key.variable if key else None)
        if cached in self._clients:
            return self._clients[cached]
        api_key = self._environ.get(key.variable) if key else None
        if provider.type == "anthropic":
            # Imported here: the Anthropic SDK takes seconds to import, and only Anthropic providers need it.
            from anthropic import AsyncAnthropic
            from pydantic_ai.providers.anthropic import AnthropicProvider

            anthropic_client = AsyncAnthropic(api_key=api_key, base_url=provider.base_url, max_retries=SDK_MAX_RETRIES)
            built: Provider[Any] = AnthropicProvider(anthropic_client=anthropic_client)
        else:
            openai_client = AsyncOpenAI(
                api_key=api_key or "api-key-not-set", base_url=provider.base_url, max_retries=SDK_MAX_RETRIES
            )
            built = OpenAIProvider(openai_client=openai_client)
        self._clients[cached] = built
        return built
