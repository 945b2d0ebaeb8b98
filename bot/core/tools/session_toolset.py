"""The agent-facing session tools (``sessions_spawn``, ``subagents``, ``sessions_*``, ``agents_list``).

Each tool checks its arguments, then asks the core through :class:`SessionControl`; the core decides and
persists. A tool with an effect (spawning, sending, steering, killing, switching the model) is a step of a durable
run (``durable_runs.step``): a run resumed after a crash gets back what the call answered, and does not
do it again (``spawn_subagent`` and ``delegate`` journal their launch, then wait for the child, in the core). Tools
answer with JSON objects (``{"status": ...}``) rather than raising, so a refused call is
something the model reads and adapts to; ``spawn_subagent`` answers with bare text, as its contract says: the
child's final text, or the refusal's words. Only the tools the policy allows for the caller's role are built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_ai import RunContext, Tool
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from bot.core.durable.durable_runs import step
from bot.core.errors import TextRefused
from bot.core.limits import checked_text
from bot.core.memory.scope import MemoryScope
from bot.core.runs.spawn_policy import SpawnArgs
from bot.core.tools.delegate_tasks import tool_result
from bot.core.tools.tool_policy import (
    AGENTS_LIST,
    DELEGATE,
    MODEL_SWITCH,
    SESSIONS_HISTORY,
    SESSIONS_LIST,
    SESSIONS_SEND,
    SESSIONS_SPAWN,
    SPAWN_SUBAGENT,
    SUBAGENTS,
)
from bot.core.tools.tool_schemas import (
    AGENT_DESCRIPTION,
    DELEGATE_DESCRIPTION,
    DELEGATE_SCHEMA,
    SPAWN_SCHEMA,
    SPAWN_SUBAGENT_SCHEMA,
)
from bot.records import Session
from bot.text import quoted

DELIVERY_KEYS = ("target", "transport", "channel", "to", "threadId", "thread_id", "replyTo", "reply_to")
POLICY_KEYS = (  # what a prompt-injected child might ask for, refused naming the rule (policy_envelope.py)
    *("tools", "allowedTools", "allowed_tools", "excludedTools", "excluded_tools", "mcpServers", "mcp_servers"),
    *("level", "autonomy", "riskProfile", "risk_profile", "runtimeProfile", "runtime_profile", "alwaysAsk"),
    *("always_ask", "budget", "maxActionsPerHour", "max_actions_per_hour", "maxSpawnDepth", "max_spawn_depth"),
    "depth",
)
NARROW_ONLY = "a child's tools, budget and depth are its agent's policy narrowed by yours"
EMPTY_PROMPT = "Missing or empty 'prompt' parameter"


@dataclass(frozen=True)
class Caller:
    """The session and run a tool call comes from (the tool's pydantic-ai deps)."""

    session: Session
    run_id: str


class SessionControl(Protocol):
    async def tool_spawn(self, caller: Caller, args: SpawnArgs) -> dict[str, Any]: ...
    async def tool_agents_list(self, caller: Caller) -> dict[str, Any]: ...
    async def tool_sessions_list(self, caller: Caller) -> dict[str, Any]: ...
    async def tool_sessions_history(
        self, caller: Caller, session_key: str, limit: int, include_tools: bool
    ) -> dict[str, Any]: ...
    async def tool_sessions_send(self, caller: Caller, session_key: str, message: str) -> dict[str, Any]: ...
    async def tool_subagents(
        self, caller: Caller, action: str, target: str | None, message: str | None
    ) -> dict[str, Any]: ...
    async def tool_model_switch(self, caller: Caller, model: str) -> dict[str, Any]: ...
    async def tool_spawn_subagent(self, caller: Caller, prompt: str, memory_from: list[str] | None = None) -> str: ...
    async def tool_delegate(self, caller: Caller, raw: dict[str, Any]) -> dict[str, Any]: ...
    def delegate_roster(self, caller: Caller) -> list[str]: ...


@dataclass(frozen=True)
class ToolDeps:
    control: SessionControl
    caller: Caller
    memory_scope: MemoryScope | None = None  # what the memory tools act on (offered only with one)

    @property
    def run_id(self) -> str:
        """The run whose turn calls the tools."""
        return self.caller.run_id


def _error(message: str) -> dict[str, Any]:
    return {"status": "error", "error": message}


def _asks_for_more(tool: str, raw: dict[str, Any], *, model: bool = False) -> str | None:
    """Refuse a child's argument asking for more than its policy envelope, naming the rule.

    With ``model``, asking for another model than the one the config gives it is refused too. Refused, not ignored."""
    key = next((key for key in (*POLICY_KEYS, *(("model",) if model else ())) if key in raw), None)
    if key is None:
        return None
    rule = "the child runs on the model the config gives it" if key == "model" else NARROW_ONLY
    return f'{tool} does not take "{key}": {rule}, and a child can only narrow.'


def _validation_message(tool: str, error: ValidationError) -> str:
    problems = "; ".join(f"{quoted('.'.join(map(str, e['loc']))) or 'arguments'}: {e['msg']}" for e in error.errors())
    return f"Invalid arguments for {tool}: {problems}"


def _message_error(message: str) -> dict[str, Any] | None:
    """Check what an agent sends or steers with by people's messages' text rule."""
    try:
        checked_text(message, terse=True)
    except TextRefused as refused:
        return _error(str(refused))
    return None


class _SpawnArgsModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    task: str
    label: str | None = None
    agent_id: str | None = Field(None, alias="agentId")
    model: str | None = None
    thinking: str | None = None
    run_timeout_seconds: float | None = Field(None, alias="runTimeoutSeconds", ge=0)
    thread: bool = False
    mode: str | None = None
    cleanup: str = "keep"
    sandbox: str = "inherit"
    runtime: str = "subagent"


async def sessions_spawn(ctx: RunContext[ToolDeps], **raw: Any) -> dict[str, Any]:
    for key in DELIVERY_KEYS:
        if key in raw:
            return _error(
                f'sessions_spawn does not support "{key}". Use "message" or "sessions_send" for channel delivery.'
            )
    if refusal := _asks_for_more("sessions_spawn", raw):
        return {"status": "forbidden", "error": refusal}
    try:
        parsed = _SpawnArgsModel.model_validate(raw)
    except ValidationError as exc:
        return _error(_validation_message("sessions_spawn", exc))
    args = SpawnArgs(**parsed.model_dump())
    return await step("sessions_spawn", ctx.deps.control.tool_spawn, ctx.deps.caller, args)


async def agents_list(ctx: RunContext[ToolDeps]) -> dict[str, Any]:
    return await ctx.deps.control.tool_agents_list(ctx.deps.caller)


async def sessions_list(ctx: RunContext[ToolDeps]) -> dict[str, Any]:
    return await ctx.deps.control.tool_sessions_list(ctx.deps.caller)


async def sessions_history(
    ctx: RunContext[ToolDeps],
    sessionKey: str,
    limit: int = 20,
    includeTools: bool = False,
) -> dict[str, Any]:
    return await ctx.deps.control.tool_sessions_history(
        ctx.deps.caller, sessionKey, max(1, min(limit, 200)), includeTools
    )


async def sessions_send(ctx: RunContext[ToolDeps], sessionKey: str, message: str) -> dict[str, Any]:
    if refused := _message_error(message):
        return refused
    return await step("sessions_send", ctx.deps.control.tool_sessions_send, ctx.deps.caller, sessionKey, message)


async def subagents(
    ctx: RunContext[ToolDeps], action: str, target: str | None = None, message: str | None = None
) -> dict[str, Any]:
    if action not in ("list", "kill", "steer"):
        return _error(f'Unknown action "{quoted(action)}". Use "list", "kill" or "steer".')
    if action == "steer" and message is not None and (refused := _message_error(message)):
        return refused
    return await step(f"subagents.{action}", ctx.deps.control.tool_subagents, ctx.deps.caller, action, target, message)


async def model_switch(ctx: RunContext[ToolDeps], model: str) -> dict[str, Any]:
    return await step("model_switch", ctx.deps.control.tool_model_switch, ctx.deps.caller, model)


async def spawn_subagent(ctx: RunContext[ToolDeps], **raw: Any) -> str:
    """The prompt is checked first; the core checks the rest, in the contract's order.

    The answer is text the model reads: the child's final text, or the refusal's words."""
    prompt = raw.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return EMPTY_PROMPT
    if refusal := _asks_for_more("spawn_subagent", raw, model=True):
        return refusal
    memory_from = raw.get("memory_from")
    if memory_from is not None and not (
        isinstance(memory_from, list) and all(isinstance(alias, str) for alias in memory_from)
    ):
        return 'spawn_subagent: "memory_from" must be a list of agent aliases'
    return await ctx.deps.control.tool_spawn_subagent(ctx.deps.caller, prompt.strip(), memory_from)


async def delegate(ctx: RunContext[ToolDeps], **raw: Any) -> dict[str, Any]:
    """Every argument is checked by the core, in the tool's contract order."""
    if refusal := _asks_for_more("delegate", raw, model=True):
        return tool_result(False, error=refusal)
    return await ctx.deps.control.tool_delegate(ctx.deps.caller, raw)


async def _with_roster(ctx: RunContext[ToolDeps], definition: ToolDefinition) -> ToolDefinition:
    """The ``agent`` parameter names the caller's reachable targets (none when its policy forbids delegating)."""
    roster = ctx.deps.control.delegate_roster(ctx.deps.caller)
    schema = {**definition.parameters_json_schema}
    properties = {**schema["properties"]}
    available = ", ".join(roster) if roster else "(none configured)"
    properties["agent"] = {**properties["agent"], "description": f"{AGENT_DESCRIPTION} Available: {available}"}
    schema["properties"] = properties
    return replace(definition, parameters_json_schema=schema)


def _tool(function, name: str, description: str) -> Tool[ToolDeps]:
    return Tool(function, takes_ctx=True, name=name, description=description)


_delegate_tool: Tool[ToolDeps] = Tool.from_schema(
    delegate, name=DELEGATE, description=DELEGATE_DESCRIPTION, json_schema=DELEGATE_SCHEMA, takes_ctx=True
)
_delegate_tool.prepare = _with_roster

_TOOLS: dict[str, Tool[ToolDeps]] = {
    SESSIONS_SPAWN: Tool.from_schema(
        sessions_spawn,
        name=SESSIONS_SPAWN,
        description=(
            "Spawn a sub-agent that works on a task in the background, in its own session. Returns at once with "
            "status 'accepted'; its result arrives later as a completion event. Do not poll for it."
        ),
        json_schema=SPAWN_SCHEMA,
        takes_ctx=True,
    ),
    AGENTS_LIST: _tool(agents_list, AGENTS_LIST, "List the agent ids you may pass as agentId to sessions_spawn."),
    SESSIONS_LIST: _tool(sessions_list, SESSIONS_LIST, "List the sub-agent sessions you spawned, with their status."),
    SESSIONS_HISTORY: _tool(
        sessions_history, SESSIONS_HISTORY, "Read the transcript of a sub-agent session you spawned."
    ),
    SESSIONS_SEND: _tool(
        sessions_send,
        SESSIONS_SEND,
        "Send a message into a sub-agent session you spawned: steers it if running, else starts a follow-up run.",
    ),
    SUBAGENTS: _tool(
        subagents,
        SUBAGENTS,
        "Manage your own sub-agents. action: list | kill (target) | steer (target, message). Targets: the list "
        "index, label, run id prefix, or session key.",
    ),
    MODEL_SWITCH: _tool(
        model_switch,
        MODEL_SWITCH,
        "Switch the model this conversation runs on, from your next turn, to one of the configured models "
        "(<provider>/<model>).",
    ),
    SPAWN_SUBAGENT: Tool.from_schema(
        spawn_subagent,
        name=SPAWN_SUBAGENT,
        description=(
            "Spawn an ephemeral SubAgent that inherits this agent's identity, security policy, and memory allowlist. "
            "The SubAgent runs the supplied prompt to completion under the parent's permissions envelope and returns "
            "its response. Use for focused subtasks (research lookup, multi-step reasoning, etc.) that should not "
            "pollute this agent's main conversation history. Cost-aware: each SubAgent run is a full agent loop and "
            "consumes provider tokens."
        ),
        json_schema=SPAWN_SUBAGENT_SCHEMA,
        takes_ctx=True,
    ),
    DELEGATE: _delegate_tool,
}


def session_toolset(allowed: frozenset[str], more: Sequence[Tool[Any]] = ()) -> FunctionToolset[ToolDeps] | None:
    """A caller's one toolset: the tools its role allows, and ``more`` (``None``: no tool).

    One toolset, not one per room: pydantic-ai prepares each toolset of a turn in a task of its own before every
    model request."""
    tools = [tool for name, tool in _TOOLS.items() if name in allowed] + list(more)
    return FunctionToolset(tools) if tools else None
