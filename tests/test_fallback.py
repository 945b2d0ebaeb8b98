"""Provider fallback chains, per-agent API keys and configured prices: which failure moves a run to the next
candidate, what a run that exhausted its chain says (and never says), which model served, what the answer cost,
and which key each agent's requests carry."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelConnectionError, ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RequestUsage

from bot.agents.fallback import Candidate, ModelChain, chain_of
from bot.agents.models import ModelFactory
from bot.agents.pricing import cost_at
from bot.agents.runner import RunOutcome, RunRequest, run_agent
from bot.config import AgentConfig, AgentDefaults, AgentsConfig, ModelPrice, ProviderConfig
from bot.records import RunStatus, Usage
from tests.fakes.openai_server import FakeOpenAI

KEY_HINT = "check the key in TB_X_KEY (providers.x.api_key_env)"
SECRET_BODY = "upstream trace id 7f3a: db password hunter2"
NO_WAIT = {"retry-after-ms": "1"}  # the provider asks the SDK to retry at once (it retries once)


class Calls:
    """A candidate's FunctionModel that answers ``reply`` or raises ``error``, counting its calls."""

    def __init__(self, *, reply: str = "done", error: Exception | None = None, tokens: tuple[int, int] = (10, 5)):
        self.count = 0
        self.reply, self.error, self.tokens = reply, error, tokens

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.count += 1
        if self.error is not None:
            raise self.error
        usage = RequestUsage(input_tokens=self.tokens[0], output_tokens=self.tokens[1])
        return ModelResponse(parts=[TextPart(self.reply)], usage=usage)


def candidate(reference: str, calls: Calls, price: ModelPrice | None = None) -> Candidate:
    return Candidate(FunctionModel(calls, model_name=reference), reference, key_hint=KEY_HINT, price=price)


def http_error(status: int) -> ModelHTTPError:
    return ModelHTTPError(status, "m", body={"error": {"message": SECRET_BODY}})


async def run(model: Model, **request: Any) -> RunOutcome:
    async def on_step(messages: object, usage: Usage) -> None:
        pass

    return await run_agent(
        RunRequest(prompt="go", system_prompt="", model=model, history=[], **request), on_step=on_step
    )


@pytest.mark.parametrize(
    "error",
    [http_error(429), http_error(500), http_error(503), ModelConnectionError("m", "Connection error.")],
    ids=["429", "500", "503", "connection"],
)
async def test_a_transient_failure_moves_the_run_to_the_next_candidate(error):
    primary, backup = Calls(error=error), Calls(reply="from the backup")

    outcome = await run(chain_of([candidate("x/primary", primary), candidate("x/backup", backup)]))

    assert (outcome.status, outcome.result_text) == (RunStatus.COMPLETED, "from the backup")
    assert outcome.served_model == "x/backup"
    assert (primary.count, backup.count) == (1, 1)


async def test_the_primary_serves_when_it_answers():
    outcome = await run(chain_of([candidate("x/primary", Calls()), candidate("x/backup", Calls())]))
    assert outcome.served_model == "x/primary"


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_a_rejected_request_is_not_tried_on_another_candidate(status):
    backup = Calls()

    outcome = await run(chain_of([candidate("x/primary", Calls(error=http_error(status))), candidate("x/b", backup)]))

    assert outcome.status is RunStatus.FAILED
    assert backup.count == 0


async def test_a_rejected_key_fails_the_run_naming_the_variable_to_check():
    outcome = await run(chain_of([candidate("x/primary", Calls(error=http_error(401))), candidate("x/b", Calls())]))

    assert outcome.error == f"model provider rejected the API key (401); {KEY_HINT}"


async def test_an_exhausted_chain_lists_its_failures_in_order_without_what_the_providers_said():
    errors = [http_error(500), http_error(429), ModelConnectionError("m", "Connection error.")]
    candidates = [candidate(f"x/m{i}", Calls(error=error)) for i, error in enumerate(errors, 1)]

    outcome = await run(chain_of(candidates))

    assert outcome.status is RunStatus.FAILED
    assert outcome.error == (
        "All model providers/models failed after 3 failure event(s). Events:\n"
        "event 1: x/m1: server error (HTTP 500)\n"
        "event 2: x/m2: rate limited (HTTP 429)\n"
        "event 3: x/m3: connection failed"
    )


async def test_an_exhausted_long_chain_shows_eight_events_and_counts_the_rest():
    candidates = [candidate(f"x/m{i}", Calls(error=http_error(503))) for i in range(1, 11)]

    outcome = await run(chain_of(candidates))

    lines = (outcome.error or "").splitlines()
    assert lines[0] == "All model providers/models failed after 10 failure event(s). Events:"
    assert lines[1:9] == [f"event {i}: x/m{i}: server error (HTTP 503)" for i in range(1, 9)]
    assert lines[9:] == ["[2 additional failure event(s) omitted]"]


def test_a_configured_price_is_per_million_tokens():
    price = ModelPrice(input_per_mtok=Decimal("0.15"), output_per_mtok=Decimal("0.60"))
    assert cost_at(price, RequestUsage(input_tokens=2_000, output_tokens=500)) == Decimal("0.0006")
    free = ModelPrice(input_per_mtok=Decimal(0), output_per_mtok=Decimal(0))
    assert cost_at(free, RequestUsage(input_tokens=2_000, output_tokens=500)) == 0


async def test_the_run_costs_the_price_of_the_candidate_that_served_it():
    cheap = ModelPrice(input_per_mtok=Decimal(1), output_per_mtok=Decimal(1))
    dear = ModelPrice(input_per_mtok=Decimal(100), output_per_mtok=Decimal(200))
    primary = candidate("x/cheap", Calls(error=http_error(503)), cheap)
    backup = candidate("x/dear", Calls(tokens=(1_000, 500)), dear)

    outcome = await run(chain_of([primary, backup]))

    assert outcome.usage.cost == Decimal("0.2")  # 1000 × 100 / 1M + 500 × 200 / 1M


async def test_a_price_of_zero_is_free_and_no_price_is_unknown():
    free = ModelPrice(input_per_mtok=Decimal(0), output_per_mtok=Decimal(0))
    assert (await run(candidate("x/local", Calls(), free))).usage.cost == 0
    assert (await run(candidate("x/local", Calls()))).usage.cost is None


async def test_a_run_with_an_unpriced_answer_has_an_unknown_cost():
    """pydantic-ai adds up the costs it knows: a run whose later answer came unpriced would look cheaper than it
    was."""
    price = ModelPrice(input_per_mtok=Decimal(1), output_per_mtok=Decimal(1))
    steps: list[ModelResponse | Exception] = [ModelResponse(parts=[ToolCallPart("noop", {})]), http_error(503)]

    def primary(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain
    def noop() -> str:
        return "ok"

    priced = Candidate(FunctionModel(primary), "x/priced", key_hint=KEY_HINT, price=price)
    outcome = await run(chain_of([priced, candidate("x/unpriced", Calls())]), toolsets=[toolset])

    assert outcome.served_model == "x/unpriced"
    assert outcome.usage.requests == 2
    assert outcome.usage.cost is None


# --- the factory: chains, keys, prices, over a real OpenAI-compatible server ------------------------------------


def factory(
    base_url: str,
    *,
    defaults: list[str] | None = None,
    agents: dict[str, AgentConfig] | None = None,
    environ: dict[str, str] | None = None,
    pricing: dict[str, ModelPrice] | None = None,
) -> ModelFactory:
    return ModelFactory(
        {"fake": ProviderConfig(type="openai", base_url=base_url, api_key_env="TB_FAKE_KEY")},
        {"TB_FAKE_KEY": "sk-provider-key", **(environ or {})},
        agents=AgentsConfig(
            defaults=AgentDefaults(model="fake/gpt-4o-mini", fallback_models=defaults or []),
            list={"main": AgentConfig(), **(agents or {})},
        ),
        pricing=pricing,
    )


def references(model: Model) -> list[str]:
    return model.references if isinstance(model, ModelChain) else [model.reference]  # type: ignore[attr-defined]


def test_an_agents_chain_is_its_model_then_its_own_fallbacks_else_the_defaults():
    models = factory(
        "http://127.0.0.1:9/v1",
        defaults=["fake/gpt-4o", "fake/o3"],
        agents={
            "main": AgentConfig(),
            "solo": AgentConfig(fallback_models=[]),
            "own": AgentConfig(fallback_models=["fake/o4-mini", "fake/gpt-4o-mini"]),
        },
    )
    assert references(models.chain("fake/gpt-4o-mini", agent="main")) == ["fake/gpt-4o-mini", "fake/gpt-4o", "fake/o3"]
    assert references(models.chain("fake/gpt-4o-mini", agent="solo")) == ["fake/gpt-4o-mini"]
    # an explicitly requested model leads its agent's chain; a candidate is tried once
    assert references(models.chain("fake/gpt-4o-mini", agent="own")) == ["fake/gpt-4o-mini", "fake/o4-mini"]
    assert references(models.chain("fake/o3", agent="own")) == ["fake/o3", "fake/o4-mini", "fake/gpt-4o-mini"]


def test_each_agent_gets_its_own_key_and_client_and_shares_the_providers_otherwise():
    models = factory(
        "http://127.0.0.1:9/v1",
        agents={
            "alpha": AgentConfig(api_key_env={"fake": "TB_ALPHA_KEY"}),
            "beta": AgentConfig(api_key_env={"fake": "TB_BETA_KEY"}),
            "gamma": AgentConfig(),
        },
        environ={"TB_ALPHA_KEY": "sk-alpha", "TB_BETA_KEY": "sk-beta"},
    )

    def client(agent: str | None):
        return models.resolve("fake/gpt-4o", agent).model.client  # type: ignore[attr-defined]

    assert (client("alpha").api_key, client("beta").api_key) == ("sk-alpha", "sk-beta")
    assert client("alpha") is not client("beta")
    assert client("alpha") is client("alpha")
    assert client("gamma").api_key == "sk-provider-key"
    assert client("gamma") is client(None)


@pytest.fixture
async def fake():
    async with FakeOpenAI() as server:
        yield server


async def test_two_agents_requests_carry_their_own_keys(fake: FakeOpenAI):
    models = factory(
        fake.base_url,
        agents={"alpha": AgentConfig(api_key_env={"fake": "TB_ALPHA_KEY"}), "beta": AgentConfig()},
        environ={"TB_ALPHA_KEY": "sk-alpha"},
    )

    await run(models.chain("fake/gpt-4o", agent="alpha"))
    await run(models.chain("fake/gpt-4o", agent="beta"))

    assert [r["headers"]["authorization"] for r in fake.requests] == ["Bearer sk-alpha", "Bearer sk-provider-key"]


async def test_a_rejected_key_names_the_agents_own_variable(fake: FakeOpenAI):
    models = factory(
        fake.base_url,
        defaults=["fake/gpt-4o"],
        agents={"alpha": AgentConfig(api_key_env={"fake": "TB_ALPHA_KEY"})},
        environ={"TB_ALPHA_KEY": "sk-alpha"},
    )
    fake.error(401, "Incorrect API key provided: sk-alpha", model="gpt-4o-mini")

    outcome = await run(models.chain("fake/gpt-4o-mini", agent="alpha"))

    assert outcome.error == (
        "model provider rejected the API key (401); check the key in TB_ALPHA_KEY (agents.list.alpha.api_key_env.fake)"
    )
    assert [r["model"] for r in fake.requests] == ["gpt-4o-mini"]


async def test_an_exhausted_chain_over_the_wire_says_nothing_the_provider_said(fake: FakeOpenAI):
    models = factory(fake.base_url, defaults=["fake/gpt-4o"])
    for _ in range(2):  # the SDK retries once
        fake.error(500, SECRET_BODY, model="gpt-4o-mini", headers=NO_WAIT)
        fake.error(429, SECRET_BODY, model="gpt-4o", headers=NO_WAIT)

    outcome = await run(models.chain("fake/gpt-4o-mini", agent="main"))

    assert outcome.error == (
        "All model providers/models failed after 2 failure event(s). Events:\n"
        "event 1: fake/gpt-4o-mini: server error (HTTP 500)\n"
        "event 2: fake/gpt-4o: rate limited (HTTP 429)"
    )
    for secret in ("hunter2", "7f3a", "sk-provider-key", "127.0.0.1", fake.base_url):
        assert secret not in outcome.error


async def test_a_configured_price_overrides_the_catalogue_for_the_model_that_served(fake: FakeOpenAI):
    price = ModelPrice(input_per_mtok=Decimal(1000), output_per_mtok=Decimal(2000))
    models = factory(fake.base_url, defaults=["fake/gpt-4o"], pricing={"fake/gpt-4o": price})
    fake.reply("catalogue-priced", model="gpt-4o-mini")

    catalogue = await run(models.chain("fake/gpt-4o-mini", agent="main"))
    for _ in range(2):
        fake.error(503, SECRET_BODY, model="gpt-4o-mini", headers=NO_WAIT)
    fake.reply("configured-priced", model="gpt-4o")
    configured = await run(models.chain("fake/gpt-4o-mini", agent="main"))

    assert catalogue.usage.cost is not None and catalogue.usage.cost < Decimal("0.001")  # genai-prices' gpt-4o-mini
    assert (configured.result_text, configured.served_model) == ("configured-priced", "fake/gpt-4o")
    assert configured.usage.cost == Decimal("0.02")  # 10 in × 1000 / 1M + 5 out × 2000 / 1M
