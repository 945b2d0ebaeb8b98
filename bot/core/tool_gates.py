"""Which calls a session's tools must get past at call time (:class:`bot.agents.tool_gate.ToolGate`): the calls its
agent's risk profile names in ``always_ask`` wait for a person's approval — a bounded delegate's also those its
callers must ask for — and, at ``level = "readonly"``, every call with side effects is refused. A session tool acts
unless it only reads; an MCP tool acts unless its server marks it ``readOnlyHint`` (pydantic-ai keeps a tool's MCP
annotations in ``ToolDefinition.metadata``)."""

from __future__ import annotations

from typing import Any

from pydantic_ai.tools import ToolDefinition

from bot.agents.tool_gate import ToolGate
from bot.config import Config
from bot.core.tool_policy import (
    DELEGATE,
    MODEL_SWITCH,
    SESSIONS_SEND,
    SESSIONS_SPAWN,
    SPAWN_SUBAGENT,
    SUBAGENTS,
    all_session_tools,
)
from bot.records import Session

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


def tool_gate(config: Config, chain: list[Session]) -> ToolGate:
    """The gate of ``chain[0]``; ``chain`` is the session, then the callers whose tools bound it."""
    risk = config.risk_profile_of(chain[0].agent_id)
    always_ask: set[str] = set()
    for holder in chain:
        holder_risk = config.risk_profile_of(holder.agent_id)
        always_ask |= {tool.strip() for tool in (holder_risk.always_ask if holder_risk else []) if tool.strip()}
    return ToolGate(
        always_ask=frozenset(always_ask),
        read_only=risk is not None and risk.level == "readonly",
        read_only_refuses=read_only_refuses,
    )
