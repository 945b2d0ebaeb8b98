"""The built-in offline model: answers deterministically when no provider is configured, so every command
can be tried without an API key."""

from __future__ import annotations

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

OFFLINE_MODEL_REFERENCE = "offline/builtin"


def _last_user_text(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    said = " ".join(_last_user_text(messages).split())
    if len(said) > 200:
        said = said[:199] + "…"
    return ModelResponse(
        parts=[
            TextPart(
                "No model provider is configured, so the built-in offline model is answering. "
                "Add a [providers.<name>] section to the config to use a real model. "
                f"You said: {said}"
            )
        ]
    )


def offline_model() -> FunctionModel:
    return FunctionModel(_answer, model_name="builtin")
