"""A model that asks before every request whether the run may still spend: the budgets' enforcement point.

The check runs before each request the agent makes (its first and every one after a tool call), so a run that
reaches a cap mid-way stops at its next request, keeping what it already said.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic_ai.exceptions import AgentRunError
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

SpendCheck = Callable[[], Awaitable[str | None]]  # why no more requests may be made, or None


class SpendRefused(AgentRunError):
    """A request refused because a budget is spent; the run fails with this reason."""


class MeteredModel(WrapperModel):
    def __init__(self, wrapped: Model, check: SpendCheck) -> None:
        super().__init__(wrapped)
        self._check = check

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        if (reason := await self._check()) is not None:
            raise SpendRefused(reason)
        return await super().request(messages, model_settings, model_request_parameters)
