"""The thinking level a run was spawned with reaches a model that supports thinking as pydantic-ai's unified
setting: ``off`` as ``False`` (think as little as the model allows), an effort level as itself, none as none."""

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile

from bot.agents.runner import RunOutcome, RunRequest, run_agent
from bot.records import RunStatus, Usage


async def _run_with_thinking(level: str | None) -> tuple[RunOutcome, list[object]]:
    seen: list[object] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.model_request_parameters.thinking)
        return ModelResponse(parts=[TextPart("done")])

    async def on_step(messages: object, usage: Usage) -> None:
        pass

    function = FunctionModel(answer, model_name="function", profile=ModelProfile(supports_thinking=True))
    request = RunRequest(prompt="go", system_prompt="", model=function, history=[], thinking=level)
    return await run_agent(request, on_step=on_step), seen


async def _thinking_seen_by_model(level: str | None) -> object:
    outcome, seen = await _run_with_thinking(level)
    assert outcome.status is RunStatus.COMPLETED
    return seen[0]


@pytest.mark.parametrize(
    ("level", "setting"),
    [("off", False), ("minimal", "minimal"), ("high", "high"), ("max", "max"), (None, None)],
)
async def test_thinking_level_reaches_the_model(level, setting):
    assert await _thinking_seen_by_model(level) == setting


async def test_unknown_thinking_level_fails_the_run_without_reaching_the_model():
    """Unreachable through spawns (the policy checks the level), but a run still ends with an outcome."""
    outcome, seen = await _run_with_thinking("huge")
    assert (outcome.status, outcome.error, seen) == (RunStatus.FAILED, "internal error (ValueError)", [])
