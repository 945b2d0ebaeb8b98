"""The gates on a session's tool calls, from its policy envelope.

They apply at call time; the gate is a :class:`bot.agents.tool_gate.ToolGate`; the envelope is its agent's risk profile
narrowed up its chain of agent parents (``tools.policy_envelope``). The calls named in ``always_ask`` wait for a
person's approval — a bounded delegate's also those its callers must ask for — and, at ``level = "readonly"``, every
call with side effects is refused. A session tool acts unless it only reads; an MCP tool acts unless its server's
``read_only_tools`` lists it, or (no list configured) its server marks it ``readOnlyHint`` (pydantic-ai keeps a tool's
MCP annotations in ``ToolDefinition.metadata``)."""

from __future__ import annotations

from functools import partial
from typing import Any

from pydantic_ai.tools import ToolDefinition

from bot.agents.mcp_servers import TOOL_SEPARATOR
from bot.agents.tool_gate import ToolGate
from bot.config import Config
from bot.core.files.attached_files import ATTACH_FILE
from bot.core.memory.memory_tools import MEMORY_RECALL
from bot.core.tools.policy_envelope import Envelope
from bot.core.tools.tool_policy import (
    DELEGATE,
    MODEL_SWITCH,
    SESSIONS_SEND,
    SESSIONS_SPAWN,
    SPAWN_SUBAGENT,
    SUBAGENTS,
    all_session_tools,
)

ACTING_SESSION_TOOLS = frozenset({SESSIONS_SPAWN, SESSIONS_SEND, MODEL_SWITCH})
ACTING_SUBAGENTS_ACTIONS = frozenset({"kill", "steer"})
REFUSE_READ_ONLY_THEMSELVES = frozenset({SPAWN_SUBAGENT, DELEGATE})  # in their contract's words and result shape


def mcp_tool_only_reads(config: Config, name: str, tool: ToolDefinition) -> bool:
    """Whether MCP tool ``name`` (``<server>__<tool>``) only reads: as its server's ``read_only_tools`` say when the
    operator lists them, else as the server's own ``readOnlyHint`` says."""
    server, _, own_name = name.partition(TOOL_SEPARATOR)
    listed = config.mcp.servers[server].read_only_tools if server in config.mcp.servers else None
    if listed is not None:
        return own_name in listed
    annotations = (tool.metadata or {}).get("annotations") or {}
    return bool(annotations.get("readOnlyHint", False))


def read_only_refuses(config: Config, name: str, args: dict[str, Any], tool: ToolDefinition) -> bool:
    """Whether a read-only agent's call is refused at the gate: it has side effects and its tool would not refuse
    it itself."""
    if name in REFUSE_READ_ONLY_THEMSELVES or name in (MEMORY_RECALL, ATTACH_FILE):  # a file only joins the result
        return False
    if name == SUBAGENTS:
        return str(args.get("action", "")).strip().lower() in ACTING_SUBAGENTS_ACTIONS
    if name in all_session_tools():
        return name in ACTING_SESSION_TOOLS
    return not mcp_tool_only_reads(config, name, tool)


def tool_gate(envelope: Envelope, config: Config) -> ToolGate:
    return ToolGate(
        always_ask=envelope.always_ask,
        read_only=envelope.level == "readonly",
        read_only_refuses=partial(read_only_refuses, config),
    )
