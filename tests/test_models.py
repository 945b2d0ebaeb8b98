"""The model factory: provider config → pydantic-ai models, and clear errors for references it cannot serve."""

import pytest
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel

from bot.agents.models import ModelFactory, UnknownModelError
from bot.config import ProviderConfig

PROVIDERS = {
    "openai": ProviderConfig(type="openai", api_key_env="OPENAI_API_KEY"),
    "local": ProviderConfig(type="openai", base_url="http://127.0.0.1:9/v1", supports_thinking=True),
    "anthropic": ProviderConfig(type="anthropic", api_key_env="ANTHROPIC_API_KEY"),
}


def factory() -> ModelFactory:
    return ModelFactory(PROVIDERS, {"OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "sk-2"})


def test_builds_each_provider_type():
    openai = factory().resolve("openai/gpt-4o-mini")
    assert isinstance(openai.model, OpenAIChatModel) and openai.model.model_name == "gpt-4o-mini"
    assert isinstance(factory().resolve("anthropic/claude-sonnet-4-5").model, AnthropicModel)


def test_thinking_support_follows_the_model_unless_the_provider_says_otherwise():
    models = factory()
    assert models.resolve("openai/o4-mini").supports_thinking
    assert not models.resolve("openai/gpt-4o-mini").supports_thinking
    assert models.resolve("local/qwen3").supports_thinking


def test_unknown_provider_and_malformed_reference():
    with pytest.raises(
        UnknownModelError, match=r"no provider named 'nowhere' is configured .configured: anthropic, local, openai."
    ):
        factory().resolve("nowhere/x")
    with pytest.raises(UnknownModelError, match="must look like '<provider>/<model>'"):
        factory().resolve("gpt-4o")


def test_no_provider_means_offline_model():
    models = ModelFactory({})
    assert models.offline
    assert models.resolve("openai/gpt-4o-mini").reference == "offline/builtin"
