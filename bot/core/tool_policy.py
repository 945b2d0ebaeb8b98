"""Which session tools an agent is offered, by role. One resolver: later per-agent risk profiles intersect
with its answer rather than sitting beside it."""

from __future__ import annotations

from bot.config import ToolList
from bot.records import SessionRole

SESSIONS_SPAWN = "sessions_spawn"
SUBAGENTS = "subagents"
SESSIONS_LIST = "sessions_list"
SESSIONS_HISTORY = "sessions_history"
SESSIONS_SEND = "sessions_send"
AGENTS_LIST = "agents_list"

_BY_ROLE: dict[SessionRole, frozenset[str]] = {
    SessionRole.MAIN: frozenset(
        {SESSIONS_SPAWN, SUBAGENTS, SESSIONS_LIST, SESSIONS_HISTORY, SESSIONS_SEND, AGENTS_LIST}
    ),
    SessionRole.ORCHESTRATOR: frozenset({SESSIONS_SPAWN, SUBAGENTS, SESSIONS_LIST, SESSIONS_HISTORY}),
    SessionRole.LEAF: frozenset(),
}


def allowed_tools(role: SessionRole, subagent_tools: ToolList) -> frozenset[str]:
    """Tools for a session of ``role``; for sub-agents, ``[tools.subagents.tools]`` narrows further
    (deny wins; a non-empty allow list means allow-only)."""
    tools = _BY_ROLE[role]
    if role == SessionRole.MAIN:
        return tools
    if subagent_tools.allow:
        tools = tools & frozenset(subagent_tools.allow)
    return tools - frozenset(subagent_tools.deny)
