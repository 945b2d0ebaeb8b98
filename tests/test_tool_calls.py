"""One model response's tool calls through the real runner (pydantic-ai with a FunctionModel): a repeated call
with identical arguments is skipped with ZeroClaw's message, except re-entrant and exempt tools; the batch runs
one call after the other unless ``parallel_tools``."""

from __future__ import annotations

import asyncio

from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from bot.agents.runner import RunRequest, run_agent
from bot.records import RunStatus, Usage


def _returns(messages: list[ModelMessage]) -> list[str]:
    return [
        str(part.content)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


async def _run(batches: list[list[tuple[str, dict]]], toolset: FunctionToolset, **request: object) -> list[str]:
    """The model sends each batch in one response, then answers; returns what the tools returned, in order."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(message, ModelResponse) for message in messages)
        if step < len(batches):
            return ModelResponse(parts=[ToolCallPart(name, args) for name, args in batches[step]])
        return ModelResponse(parts=[TextPart("done")])

    async def on_step(messages: object, usage: Usage) -> None:
        pass

    function = FunctionModel(model, model_name="function")
    outcome = await run_agent(
        RunRequest(prompt="go", system_prompt="", model=function, history=[], toolsets=[toolset], **request),
        on_step=on_step,
    )
    assert outcome.status is RunStatus.COMPLETED
    return _returns(outcome.messages)


def _recording_toolset(calls: list[tuple[str, int]]) -> FunctionToolset:
    toolset: FunctionToolset = FunctionToolset()

    async def echo(ctx: RunContext, x: int) -> str:
        calls.append(("echo", x))
        return f"echo {x}"

    async def delegate(ctx: RunContext, x: int) -> str:
        calls.append(("delegate", x))
        return f"delegated {x}"

    toolset.add_function(echo, takes_ctx=True)
    toolset.add_function(delegate, takes_ctx=True)
    return toolset


SKIPPED = "Skipped duplicate tool call 'echo' with identical arguments in this turn."


async def test_a_repeated_call_in_one_response_is_skipped_but_runs_again_in_the_next():
    calls: list[tuple[str, int]] = []
    batches = [[("echo", {"x": 1}), ("echo", {"x": 1}), ("echo", {"x": 2})], [("echo", {"x": 1})]]
    returns = await _run(batches, _recording_toolset(calls))
    assert calls == [("echo", 1), ("echo", 2), ("echo", 1)]
    assert returns == ["echo 1", SKIPPED, "echo 2", "echo 1"]


async def test_re_entrant_and_exempt_tools_may_repeat():
    calls: list[tuple[str, int]] = []
    batches = [[("delegate", {"x": 1}), ("delegate", {"x": 1}), ("echo", {"x": 3}), ("echo", {"x": 3})]]
    returns = await _run(batches, _recording_toolset(calls), dedup_exempt=frozenset({"echo"}))
    assert calls == [("delegate", 1), ("delegate", 1), ("echo", 3), ("echo", 3)]
    assert returns == ["delegated 1", "delegated 1", "echo 3", "echo 3"]


def _interleaving_toolset(events: list[str]) -> FunctionToolset:
    toolset: FunctionToolset = FunctionToolset()

    async def first(ctx: RunContext) -> str:
        events.append("first started")
        for _ in range(5):
            await asyncio.sleep(0)
        events.append("first ended")
        return "1"

    async def second(ctx: RunContext) -> str:
        events.append("second started")
        events.append("second ended")
        return "2"

    toolset.add_function(first, takes_ctx=True)
    toolset.add_function(second, takes_ctx=True)
    return toolset


async def test_a_batch_runs_one_call_after_the_other_by_default():
    events: list[str] = []
    returns = await _run([[("first", {}), ("second", {})]], _interleaving_toolset(events))
    assert events == ["first started", "first ended", "second started", "second ended"]
    assert returns == ["1", "2"]


async def test_parallel_tools_runs_a_batch_concurrently_with_results_in_call_order():
    events: list[str] = []
    returns = await _run([[("first", {}), ("second", {})]], _interleaving_toolset(events), parallel_tools=True)
    assert events == ["first started", "second started", "second ended", "first ended"]
    assert returns == ["1", "2"]
