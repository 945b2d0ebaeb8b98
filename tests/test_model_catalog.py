"""The model catalog against the fake OpenAI-compatible server: the cache period to the second, the providers
and answers it trusts, and Ollama's ``:latest`` names."""

from __future__ import annotations

import asyncio

import pytest

from bot.agents import model_catalog
from bot.agents.model_catalog import CACHE_SECONDS, ModelCatalog
from bot.agents.models import ModelFactory
from bot.config import ProviderConfig
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.asyncio


@pytest.fixture
async def fake():
    async with FakeOpenAI(served_models=["gpt-4o", "llama3.2:latest"]) as server:
        yield server


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def models(base_url: str, type: str = "openai") -> ModelFactory:
    return ModelFactory({"fake": ProviderConfig(type=type, base_url=base_url)})


async def test_the_list_is_kept_for_the_cache_period_then_asked_again(fake: FakeOpenAI):
    clock = Clock()
    catalog = ModelCatalog(models(fake.base_url), clock=clock)

    assert await catalog.refusal("fake/gpt-4o") is None
    fake.served_models = ["gpt-4o-mini"]
    clock.now += CACHE_SECONDS - 1
    assert await catalog.refusal("fake/gpt-4o") is None
    assert fake.model_list_requests == 1
    clock.now += 1
    assert await catalog.refusal("fake/gpt-4o") == ("Unknown model 'fake/gpt-4o': provider 'fake' serves gpt-4o-mini.")
    assert fake.model_list_requests == 2


async def test_an_untagged_name_matches_ollamas_latest_tag(fake: FakeOpenAI):
    factory = models(fake.base_url)
    assert await ModelCatalog(factory).refusal("fake/llama3.2") is None
    assert await ModelCatalog(factory).refusal("fake/llama3.2:1b") is not None


@pytest.mark.parametrize("served", [None, []], ids=["404", "empty list"])
async def test_a_provider_without_a_usable_list_is_trusted(fake: FakeOpenAI, served):
    fake.served_models = served
    assert await ModelCatalog(models(fake.base_url)).refusal("fake/anything") is None
    assert fake.model_list_requests == 1


async def test_an_unreachable_provider_is_trusted():
    unreachable = models("http://127.0.0.1:9/v1")
    assert await ModelCatalog(unreachable).refusal("fake/anything") is None


async def test_a_provider_that_does_not_answer_is_trusted_after_the_list_timeout(monkeypatch):
    monkeypatch.setattr(model_catalog, "LIST_TIMEOUT_SECONDS", 0.2)
    silent: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda reader, writer: silent.append(writer), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        assert await ModelCatalog(models(f"http://127.0.0.1:{port}/v1")).refusal("fake/x") is None
        assert len(silent) == 1  # asked once (no SDK retry), then gave up waiting
    finally:
        for writer in silent:
            writer.close()
        server.close()


async def test_anthropic_and_the_offline_model_are_trusted_without_asking(fake: FakeOpenAI):
    anthropic = models(fake.base_url.removesuffix("/v1"), type="anthropic")
    assert await ModelCatalog(anthropic).refusal("fake/claude-sonnet-4-5") is None
    assert await ModelCatalog(ModelFactory({})).refusal("openai/not-a-model") is None
    assert fake.model_list_requests == 0
