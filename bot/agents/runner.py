"""The one runner: drives a pydantic-ai ``agent.iter`` to a terminal outcome.

It persists the transcript at every step, turns timeouts, cancellation and provider errors into truthful
states, and keeps partial output, so the caller never has to interpret model text to know what happened.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from pydantic_ai import Agent, CancellationToken
from pydantic_ai._agent_graph import AgentNode  # not re-exported; the type of the nodes a run iterates
from pydantic_ai.exceptions import (
    AgentRunError,
    ModelAPIError,
    ModelHTTPError,
    RunCancelled,
    RunTimedOut,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
)
from pydantic_ai.models import Model
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.run import AgentRun
from pydantic_ai.settings import ModelSettings
from pydantic_ai.settings import ThinkingLevel as ThinkingSetting
from pydantic_ai.tool_manager import ParallelExecutionMode, ToolManager
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import RunUsage, UsageLimits
from pydantic_graph import End

from bot.agents.fallback import ProviderFailure, served_by
from bot.agents.metering import SpendRefused
from bot.agents.result_caps import RESULT_MAX_BYTES, CappedToolset, ResultLimits, truncated
from bot.agents.tool_calls import DeduplicatedToolset
from bot.agents.tool_gate import GatedToolset, ToolGate
from bot.config import THINKING_LEVELS
from bot.records import RunStatus, Usage
from bot.redaction import RedactedToolset, Redactor

NO_OUTPUT = "(no output)"
KILLED_BEFORE = "the run was killed"
INTERRUPTED_BEFORE = "the bot restarted"
REQUEST_LIMIT = 500
TOOL_CALLS_LIMIT = 1000

log = structlog.get_logger(__name__)

StepCallback = Callable[[Sequence[ModelMessage], Usage], Awaitable[None]]
DrainCallback = Callable[[], Awaitable[list[str]]]


@dataclass(frozen=True)
class RunOutcome:
    status: RunStatus
    result_text: str
    error: str | None
    usage: Usage
    messages: list[ModelMessage]
    pending: tuple[ToolCallPart, ...] = ()  # ``awaiting_approval``: the calls a person must approve first

    @property
    def served_model(self) -> str | None:
        """The configured model that gave the turn's last answer.

        When it differs from the one asked for, it was a fallback candidate."""
        return served_by(self.messages)


@dataclass
class RunRequest:
    # a turn's prompt (text, or text and images and files as parts), or people's decisions on its paused calls
    prompt: str | Sequence[UserContent] | DeferredToolResults
    system_prompt: str
    model: Model  # one model, or a chain of fallback candidates
    history: list[ModelMessage]
    thinking: str | None = None
    timeout_seconds: float = 0
    toolsets: Sequence[AbstractToolset[Any]] = field(default_factory=tuple)
    deps: Any = None
    parallel_tools: bool = False  # one response's tool calls run concurrently, else one after the other
    dedup_exempt: frozenset[str] = frozenset()  # tools that may repeat a call with identical arguments
    request_limit: int | None = None  # model requests one turn may make (the runtime profile's max_tool_iterations)
    gate: ToolGate = field(default_factory=ToolGate)  # read-only refusals, calls deferred for approval
    result_limits: ResultLimits = field(default_factory=ResultLimits)  # what one tool result may hold
    redact: Redactor = field(default_factory=lambda: Redactor(()))  # tool results' secrets, before the model reads
    instrument: InstrumentationSettings | bool = False  # pydantic-ai's spans: the model requests and tool calls


TurnAgent = Agent[Any, str | DeferredToolRequests | None]
_agents: dict[int, tuple[InstrumentationSettings | bool, TurnAgent]] = {}


def _agent(instrument: InstrumentationSettings | bool) -> TurnAgent:
    """The agent every turn runs on, one per instrumentation: its instructions and tools come with each run.

    Building an agent is costly (its output schemas); an agent holds no run's state."""
    known = _agents.get(id(instrument))
    if known is not None and known[0] is instrument:
        return known[1]
    # ``str | None``: a response with no text (after tool work, or at all) ends the run instead of being
    # retried into a failure; the result is then the last tool result or ``(no output)``. A turn whose calls
    # wait for approval ends with them (``DeferredToolRequests``).
    agent: TurnAgent = Agent(deps_type=object, output_type=[str | None, DeferredToolRequests])
    agent.instrument = instrument
    if len(_agents) >= 8:  # instrumentation is one per bot: only tests make more
        _agents.clear()
    _agents[id(instrument)] = (instrument, agent)
    return agent


def _builds_a_request(node: AgentNode[Any, Any] | End[Any]) -> bool:
    """Whether the graph's next node leads to building a model request: the first, or one after tool calls.

    A model request node sends one already built; an answer calling no tool ends the turn."""
    if isinstance(node, End) or Agent.is_model_request_node(node):
        return False
    return not Agent.is_call_tools_node(node) or bool(node.model_response.tool_calls)


def _thinking_setting(level: str) -> ThinkingSetting:
    """Our ``off`` is pydantic-ai's ``False``; the effort levels are the same words (checked at spawn)."""
    for known in THINKING_LEVELS:
        if level == known:
            return False if known == "off" else known
    raise ValueError(f"unknown thinking level {level!r}; expected one of {', '.join(THINKING_LEVELS)}")


def _usage(run_usage: RunUsage, messages: Sequence[ModelMessage]) -> Usage:
    """The turn's usage; its cost only when every response's is known (pydantic-ai adds up the known ones)."""
    priced = all(message.usage.cost is not None for message in messages if isinstance(message, ModelResponse))
    return Usage(
        input_tokens=run_usage.input_tokens,
        output_tokens=run_usage.output_tokens,
        requests=run_usage.requests,
        tool_calls=run_usage.tool_calls,
        cost=run_usage.cost if priced else None,
    )


def _texts(messages: Sequence[ModelMessage]) -> list[str]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, TextPart) and part.content.strip()
    ]


def final_text(messages: Sequence[ModelMessage]) -> str:
    """The agent's own last answer: the text of its last response (empty when it ended with none), never a
    tool result standing in for it."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return "".join(part.content for part in message.parts if isinstance(part, TextPart)).strip()
    return ""


def _last_tool_result(messages: Sequence[ModelMessage]) -> str | None:
    """The content of the last tool call that succeeded.

    A retried or failed call's content is an error."""
    for message in reversed(messages):
        for part in reversed(message.parts):
            if isinstance(part, ToolReturnPart) and part.outcome == "success":
                content = part.model_response_str().strip()
                if content:
                    return content
    return None


def _tool_call_count(messages: Sequence[ModelMessage]) -> int:
    return sum(
        isinstance(part, ToolCallPart)
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
    )


def completed_result(output: str | None, messages: Sequence[ModelMessage]) -> str:
    """The final text; if empty (a model may end with nothing to add after its tool work), the last tool
    result; if none, ``(no output)``. Cut at ``RESULT_MAX_BYTES``."""
    if output and output.strip():
        return truncated(output, RESULT_MAX_BYTES)
    return truncated(_last_tool_result(messages) or NO_OUTPUT, RESULT_MAX_BYTES)


def partial_result(messages: Sequence[ModelMessage], *, stopped_by: str | None = None) -> str:
    """What a run that did not finish got done: its last assistant text; else, for a run stopped from outside
    (``stopped_by``: a timeout, a kill, a restart), a count of its tool calls; else its last tool result. Cut at
    ``RESULT_MAX_BYTES``."""
    texts = _texts(messages)
    if texts:
        return truncated(texts[-1], RESULT_MAX_BYTES)
    calls = _tool_call_count(messages)
    if stopped_by and calls:
        return f"[Partial progress: {calls} tool call(s) executed before {stopped_by}]"
    return truncated(_last_tool_result(messages) or NO_OUTPUT, RESULT_MAX_BYTES)


_REQUEST_LIMIT = re.compile(r"request_limit of (?P<limit>\d+)")
_TOOL_RETRIES_EXHAUSTED = re.compile(r"Tool '(?P<tool>[^']+)' exceeded max retries count of (?P<retries>\d+)")


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def describe_failure(error: BaseException) -> str:
    """A short, user-readable reason; never a traceback, never request headers (they carry the API key)."""
    if isinstance(error, ProviderFailure | SpendRefused):
        return str(error)
    if isinstance(error, ModelHTTPError):
        body = error.body
        detail = None
        if isinstance(body, dict):
            inner = body.get("error", body)
            detail = inner.get("message") if isinstance(inner, dict) else None
        reason = f"model provider answered HTTP {error.status_code}"
        return f"{reason}: {detail}"[:300] if detail else reason
    if isinstance(error, ModelAPIError):
        return f"could not reach the model provider ({error.message})"[:300]
    if isinstance(error, UsageLimitExceeded) and (limit := _REQUEST_LIMIT.search(str(error))):
        return f"Agent exceeded maximum tool iterations ({limit['limit']})"
    if isinstance(error, AgentRunError):
        if retried := _TOOL_RETRIES_EXHAUSTED.match(str(error)):
            return f"the model sent an invalid call to {retried['tool']} {_times(int(retried['retries']) + 1)}"
        return str(error).splitlines()[0][:300]
    return f"internal error ({type(error).__name__})"


async def run_agent(
    request: RunRequest,
    *,
    on_step: StepCallback,
    drain: DrainCallback | None = None,
    cancellation: CancellationToken | None = None,
) -> RunOutcome:
    """Run one agent turn to a terminal outcome.

    ``on_step`` receives messages as they are produced, with the turn's usage so far (so what a run spends is
    recorded as it is spent, whatever later stops it); the opening request comes with its answer (or with what
    stopped the turn), in one write. ``drain`` is asked for messages that arrived for this run
    (steers, child completions) before each request is built (before the first, and after each round of tool calls;
    not again between building a request and sending it, nor after an answer that calls no tool: the turn ends, and
    its caller finds them for the next); they are enqueued to reach the model at that request.
    ``cancellation`` kills the run (outcome ``killed``).
    """
    agent = _agent(request.instrument)
    settings = ModelSettings()
    persisted = 0
    agent_run: AgentRun[Any, str | DeferredToolRequests | None] | None = None

    async def flush(messages: Sequence[ModelMessage], usage: RunUsage) -> None:
        nonlocal persisted
        if len(messages) > persisted:
            await on_step(messages[persisted:], _usage(usage, messages))
            persisted = len(messages)

    mode: ParallelExecutionMode = "parallel" if request.parallel_tools else "sequential"
    toolsets = [  # every tool result, of every toolset, is redacted, then cut to the limits on its way to the model
        CappedToolset(
            RedactedToolset(
                GatedToolset(DeduplicatedToolset(toolset, exempt=request.dedup_exempt), gate=request.gate),
                redact=request.redact,
            ),
            limits=request.result_limits,
        )
        for toolset in request.toolsets
    ]
    decided, prompt = (
        (request.prompt, None) if isinstance(request.prompt, DeferredToolResults) else (None, request.prompt)
    )
    with ToolManager.parallel_execution_mode(mode):
        try:
            if request.thinking:
                settings["thinking"] = _thinking_setting(request.thinking)
            async with agent.iter(
                prompt,
                instructions=request.system_prompt,
                message_history=request.history or None,
                deferred_tool_results=decided,
                model=request.model,
                model_settings=settings,
                usage_limits=UsageLimits(
                    request_limit=request.request_limit or REQUEST_LIMIT, tool_calls_limit=TOOL_CALLS_LIMIT
                ),
                timeout=request.timeout_seconds or None,
                toolsets=toolsets or None,
                deps=request.deps,
                cancellation_token=cancellation,
            ) as agent_run:
                async for node in agent_run:
                    if persisted or not Agent.is_model_request_node(node):  # the opening request: with its answer
                        await flush(agent_run.new_messages(), agent_run.usage)
                    if drain is not None and _builds_a_request(node):
                        for text in await drain():
                            agent_run.enqueue(text)
                result = agent_run.result
                assert result is not None
                messages = result.new_messages()
                await flush(messages, result.usage)
                if isinstance(result.output, DeferredToolRequests):
                    paused = partial_result(messages)
                    pending = tuple(result.output.approvals)
                    spent = _usage(result.usage, messages)
                    return RunOutcome(RunStatus.AWAITING_APPROVAL, paused, None, spent, messages, pending)
                return RunOutcome(
                    RunStatus.COMPLETED,
                    completed_result(result.output, messages),
                    None,
                    _usage(result.usage, messages),
                    messages,
                )
        except RunTimedOut as exc:
            messages = exc.new_messages()
            await flush(messages, exc.usage)
            partial = partial_result(messages, stopped_by="timeout")
            return RunOutcome(RunStatus.TIMED_OUT, partial, None, _usage(exc.usage, messages), messages)
        except RunCancelled as exc:
            messages = exc.new_messages()
            await flush(messages, exc.usage)
            partial = partial_result(messages, stopped_by=KILLED_BEFORE)
            return RunOutcome(RunStatus.KILLED, partial, "killed", _usage(exc.usage, messages), messages)
        except Exception as exc:  # every other failure is a run outcome, not a crash of the orchestrator
            if not isinstance(exc, AgentRunError):
                log.exception("agent_run_crashed")
            messages = agent_run.new_messages() if agent_run is not None else []
            usage = agent_run.usage if agent_run is not None else RunUsage()
            await flush(messages, usage)
            return RunOutcome(
                RunStatus.FAILED, partial_result(messages), describe_failure(exc), _usage(usage, messages), messages
            )
