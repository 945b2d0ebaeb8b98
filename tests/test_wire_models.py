"""An explicitly requested model is checked against the provider's own model list (GET /models) before anything
starts, over the wire: real discord.py ↔ fake Discord, real openai SDK ↔ fake OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest

from bot import app
from bot.agents import model_catalog
from bot.agents import models as models_module
from bot.agents.models import ModelFactory
from tests.harness import announcement_for, answer_to, spawned_run_id
from tests.test_wire_control import command

SERVED = "gpt-4.1, gpt-4.1-mini, gpt-4o, gpt-4o-mini, local-llama, o3, o4-mini"


async def spawn(world, model: str) -> str:
    return await command(world, world.alice, "subagents spawn", agent="researcher", task="Summarise", model=model)


async def test_an_unserved_model_is_refused_naming_the_served_ones_and_nothing_is_written(world):
    await world.start_bot()

    answer = await spawn(world, "fake/not-served")

    assert answer == f"⚠️ Unknown model 'fake/not-served': provider 'fake' serves {SERVED}."
    assert world.llm.model_list_requests == 1
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]
    assert world.rows("SELECT COUNT(*) FROM sessions") == [(0,)]
    assert world.llm.requests == []
    assert world.bot_messages() == []


async def test_a_long_list_shows_the_first_twenty_and_a_long_name_is_shortened(world):
    world.llm.served_models = [f"model-{i:02d}" for i in range(56, -1, -1)]
    await world.start_bot()

    answer = await spawn(world, "fake/" + "x" * 100)

    first_twenty = ", ".join(f"model-{i:02d}" for i in range(20))
    assert answer == (f"⚠️ Unknown model 'fake/{'x' * 74}…': provider 'fake' serves {first_twenty}, … (first 20 of 57).")
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]


async def test_a_served_model_spawns_and_the_list_is_cached_until_it_expires(world):
    await world.start_bot()

    first = await spawn(world, "fake/gpt-4o")
    assert first.startswith("Spawned subagent researcher"), first
    await world.discord.wait_for_message(world.channel, announcement_for(spawned_run_id({"content": first})))
    assert world.llm.requests[0]["model"] == "gpt-4o"
    assert world.llm.model_list_requests == 1

    world.llm.served_models = ["gpt-4o-mini"]  # the provider stops serving gpt-4o; the cached answer still holds
    second = await spawn(world, "fake/gpt-4o")
    assert second.startswith("Spawned subagent researcher"), second
    assert world.llm.model_list_requests == 1

    world.monkeypatch.setattr(model_catalog, "CACHE_SECONDS", 0.0)  # the cache period has passed
    third = await spawn(world, "fake/gpt-4o")
    assert third == "⚠️ Unknown model 'fake/gpt-4o': provider 'fake' serves gpt-4o-mini."
    assert world.llm.model_list_requests == 2
    await world.quiescent()
    assert world.rows("SELECT model, status FROM runs") == [("fake/gpt-4o", "completed")] * 2


async def test_the_configured_default_model_is_not_checked(world):
    world.llm.served_models = ["something-else"]
    await world.start_bot()

    answer = await command(world, world.alice, "subagents spawn", agent="researcher", task="Summarise")

    assert answer.startswith("Spawned subagent researcher"), answer
    await world.quiescent()
    assert world.llm.model_list_requests == 0
    assert world.rows("SELECT model, status FROM runs") == [("fake/gpt-4o-mini", "completed")]


async def test_a_provider_without_a_model_list_is_trusted_and_asked_once(world):
    world.llm.served_models = None  # GET /models answers 404
    await world.start_bot()

    first = await spawn(world, "fake/anything-goes")
    second = await spawn(world, "fake/anything-goes")

    assert first.startswith("Spawned subagent researcher") and second.startswith("Spawned subagent researcher")
    await world.quiescent()
    assert world.llm.model_list_requests == 1
    assert [r["model"] for r in world.llm.requests] == ["anything-goes"] * 2
    assert world.rows("SELECT status FROM runs") == [("completed",)] * 2


@pytest.mark.parametrize(
    ("model", "named", "reason", "lists"),
    [
        ("fake/not-served", True, f"Unknown model 'fake/not-served': provider 'fake' serves {SERVED}.", 1),
        ("fake/gpt-4o", False, "An agent may pick only a model the config names (fake/gpt-4o-mini).", 0),
    ],
    ids=["not-served", "not-named"],
)
async def test_sessions_spawn_with_an_unusable_model_runs_the_child_on_the_default_with_a_warning(
    world, model, named, reason, lists
):
    if named:  # the config names it (an idle agent's model), so only the provider's list refuses it
        world.extra_config = f'[agents.list.spare]\nmodel = "{model}"\n'
    world.llm.tool_call("sessions_spawn", {"task": "Research it", "model": model})
    world.llm.default = lambda body: "I started it." if body["messages"][-1]["role"] == "tool" else "Found it."
    await world.start_bot()

    asked = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> go")
    reply = await world.discord.wait_for_message(world.channel, answer_to(asked))

    assert reply["content"] == "I started it."
    [answered] = [r for r in world.llm.requests if r["messages"][-1]["role"] == "tool"]
    result = json.loads(answered["messages"][-1]["content"])
    assert result["status"] == "accepted"
    assert result["warning"] == (
        f'Model "{model}" is not available; running on the default model fake/gpt-4o-mini. {reason}'
    )
    told = f"<@{world.alice.id}> Found it."  # the main agent tells the child's result, in its own voice
    await world.discord.wait_for_message(world.channel, lambda message: message["content"] == told)
    [child] = [r for r in world.llm.requests if r["messages"][-1]["content"] == "Research it"]
    assert child["model"] == "gpt-4o-mini"
    assert world.llm.model_list_requests == lists
    await world.quiescent()
    assert world.rows("SELECT kind, model, status FROM runs ORDER BY created_at") == [
        ("chat", "fake/gpt-4o-mini", "completed"),
        ("spawn", "fake/gpt-4o-mini", "completed"),
        ("chat", "fake/gpt-4o-mini", "completed"),
    ]


async def test_refused_model_names_build_and_keep_nothing(world):
    factories: list[ModelFactory] = []

    class Watched(ModelFactory):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            factories.append(self)

    world.monkeypatch.setattr(app, "ModelFactory", Watched)
    await world.start_bot()
    [models] = factories

    for i in range(25):
        answer = await spawn(world, f"fake/not-served-{i}")
        assert answer == f"⚠️ Unknown model 'fake/not-served-{i}': provider 'fake' serves {SERVED}."
        assert models.kept == (0, 1)  # no model built; the one client the provider's list is asked with

    assert world.llm.model_list_requests == 1
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]
    served = await spawn(world, "fake/gpt-4o")
    assert served.startswith("Spawned subagent researcher"), served
    await world.quiescent()
    assert models.kept == (1, 1)  # the model that ran, on the provider's one client


async def test_models_kept_built_are_bounded_when_the_provider_lists_none(world):
    world.llm.served_models = None  # every name is trusted, and runs
    world.monkeypatch.setattr(models_module, "KEPT_MODELS", 3)
    factories: list[ModelFactory] = []

    class Watched(ModelFactory):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            factories.append(self)

    world.monkeypatch.setattr(app, "ModelFactory", Watched)
    await world.start_bot()

    for i in range(6):
        answer = await spawn(world, f"fake/trusted-{i}")
        assert answer.startswith("Spawned subagent researcher"), answer
        await world.quiescent()
        assert factories[0].kept[0] <= 3

    assert [r["model"] for r in world.llm.requests] == [f"trusted-{i}" for i in range(6)]
    assert factories[0].kept[1] == 1
