"""A model whose requests are DBOS steps when a run is a workflow: a request that completed is answered from the
journal when the workflow is recovered, never sent again. And a toolset whose calls are steps the same way (MCP
tools: a call that completed is not made again; one the crash cut off is made again, so at least once).

The step wraps the run's whole model (the budget check, then the fallback chain), so nothing about the model has to
cross the step boundary: DBOS records only a step's output (the response, or the error it raised), and the live
model object the run built makes the request. pydantic-ai's ``DBOSDurability`` would need every model registered by
key when the agent is built; ours are built per run (a budget check bound to the run, per-agent keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbos import DBOS, StepOptions
from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.toolsets import ToolsetTool, WrapperToolset

MODEL_STEP = "model.request"


def in_workflow() -> bool:
    """Whether this is a DBOS workflow's own code.

    Not a step's, and not code outside any workflow."""
    return DBOS.workflow_id is not None and DBOS.step_id is None


class JournaledModel(WrapperModel):
    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        if not in_workflow():
            return await self.wrapped.request(messages, model_settings, model_request_parameters)
        step: StepOptions = {"name": MODEL_STEP, "preemptible": True}  # a kill's cancellation aborts it in flight
        return await DBOS.run_step_async(step, self.wrapped.request, messages, model_settings, model_request_parameters)


@dataclass
class JournaledToolset(WrapperToolset[Any]):
    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if not in_workflow():
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        return await DBOS.run_step_async({"name": f"tool.{name}"}, self.wrapped.call_tool, name, tool_args, ctx, tool)
