"""Turns a ``<provider>/<model>`` reference into a pydantic-ai model built from the config's providers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from openai import AsyncOpenAI
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

from bot.agents.offline import OFFLINE_MODEL_REFERENCE, offline_model
from bot.config import ProviderConfig
from bot.text import quoted

SDK_MAX_RETRIES = 1
ANTHROPIC_MAX_TOKENS = 8192


class UnknownModelError(ValueError):
    """The reference names no configured provider, or is not shaped ``<provider>/<model>``."""


@dataclass(frozen=True)
class ResolvedModel:
    reference: str
    model: Model

    @property
    def supports_thinking(self) -> bool:
        return bool(self.model.profile.get("supports_thinking"))


class ModelFactory:
    """Builds (and caches) one pydantic-ai model per reference; with no provider at all, the offline model."""

    def __init__(self, providers: Mapping[str, ProviderConfig], environ: Mapping[str, str] | None = None) -> None:
        self._providers = dict(providers)
        self._environ = os.environ if environ is None else environ
        self._cache: dict[str, ResolvedModel] = {}

    @property
    def offline(self) -> bool:
        return not self._providers

    def resolve(self, reference: str) -> ResolvedModel:
        provider_name, _, model_name = reference.partition("/")
        if not provider_name or not model_name:
            raise UnknownModelError(
                f"Model '{quoted(reference)}' must look like '<provider>/<model>', e.g. 'openai/gpt-4o-mini'."
            )
        if self.offline:
            reference = OFFLINE_MODEL_REFERENCE
        if reference not in self._cache:
            self._cache[reference] = ResolvedModel(reference, self._build(provider_name, model_name))
        return self._cache[reference]

    def _build(self, provider_name: str, model_name: str) -> Model:
        if self.offline:
            return offline_model()
        provider = self._providers.get(provider_name)
        if provider is None:
            raise UnknownModelError(
                f"Unknown model '{quoted(f'{provider_name}/{model_name}')}': no provider named "
                f"'{quoted(provider_name)}' is configured "
                f"(configured: {', '.join(sorted(self._providers))})."
            )
        api_key = self._environ.get(provider.api_key_env) if provider.api_key_env else None
        profile = (
            ModelProfile(supports_thinking=provider.supports_thinking)
            if provider.supports_thinking is not None
            else None
        )
        if provider.type == "anthropic":
            # Imported here: the Anthropic SDK takes seconds to import, and only Anthropic providers need it.
            from anthropic import AsyncAnthropic
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            anthropic_client = AsyncAnthropic(api_key=api_key, base_url=provider.base_url, max_retries=SDK_MAX_RETRIES)
            return AnthropicModel(
                model_name,
                provider=AnthropicProvider(anthropic_client=anthropic_client),
                profile=profile,
                settings=ModelSettings(max_tokens=ANTHROPIC_MAX_TOKENS),
            )
        openai_client = AsyncOpenAI(
            api_key=api_key or "api-key-not-set", base_url=provider.base_url, max_retries=SDK_MAX_RETRIES
        )
        return OpenAIChatModel(model_name, provider=OpenAIProvider(openai_client=openai_client), profile=profile)
