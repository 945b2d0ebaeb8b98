"""The thinking level a run was spawned with reaches a model that supports thinking as pydantic-ai's unified
setting: ``off`` as ``False`` (think as little as the model allows), an effort level as itself, none as none."""

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile

from bot.agents.models import ResolvedModel
from bot.agents.runner import RunRequest, run_agent
from bot.records import RunStatus, Usage


async def _thinking_seen_by_model(level: str | None) -> object:
    seen: list[object] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.model_request_parameters.thinking)
        return ModelResponse(parts=[TextPart("done")])

    async def on_step(messages: object, usage: Usage) -> None:
        pass

    function = FunctionModel(answer, model_name="function", profile=ModelProfile(supports_thinking=True))
    model = ResolvedModel("test/function", function)
    request = RunRequest(prompt="go", system_prompt="", model=model, history=[], thinking=level)
    outcome = await run_agent(request, on_step=on_step)
    assert outcome.status is RunStatus.COMPLETED
    return seen[0]


@pytest.mark.parametrize(
    ("level", "setting"),
    [("off", False), ("minimal", "minimal"), ("high", "high"), ("max", "max"), (None, None)],
)
async def test_thinking_level_reaches_the_model(level, setting):
    assert await _thinking_seen_by_model(level) == setting


async def test_unknown_thinking_level_is_named_not_sent():
    with pytest.raises(ValueError, match="unknown thinking level 'huge'"):
        await _thinking_seen_by_model("huge")
