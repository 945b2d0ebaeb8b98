"""Which calls a session's tools must get past at call time (:class:`bot.agents.tool_gate.ToolGate`), from its
policy envelope (its agent's risk profile narrowed up its chain of agent parents, :mod:`bot.core.policy_envelope`):
the calls named in ``always_ask`` wait for a person's approval — a bounded delegate's also those its callers must
ask for — and, at ``level = "readonly"``, every call with side effects is refused. A session tool acts
unless it only reads; an MCP tool acts unless its server marks it ``readOnlyHint`` (pydantic-ai keeps a tool's MCP
annotations in ``ToolDefinition.metadata``)."""

from __future__ import annotations

from typing import Any

from pydantic_ai.tools import ToolDefinition

from bot.agents.tool_gate import ToolGate
from bot.core.policy_envelope import Envelope
from bot.core.tool_policy import (
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
REFUSE_READ_ONLY_THEMSELVES = frozenset({SPAWN_SUBAGENT, DELEGATE})  # in ZeroClaw's words and result shape


def read_only_refuses(name: str, args: dict[str, Any], tool: ToolDefinition) -> bool:
    """Whether a read-only agent's call is refused at the gate: it has side effects and its tool would not refuse
    it itself."""
    if name in REFUSE_READ_ONLY_THEMSELVES:
        return False
    if name == SUBAGENTS:
        return str(args.get("action", "")).strip().lower() in ACTING_SUBAGENTS_ACTIONS
    if name in all_session_tools():
        return name in ACTING_SESSION_TOOLS
    annotations = (tool.metadata or {}).get("annotations") or {}
    return not annotations.get("readOnlyHint", False)


def tool_gate(envelope: Envelope) -> ToolGate:
    return ToolGate(
        always_ask=envelope.always_ask, read_only=envelope.level == "readonly", read_only_refuses=read_only_refuses
    )
