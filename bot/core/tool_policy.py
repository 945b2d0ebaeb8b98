"""Which tools an agent is offered: the one resolver. Its depth role's tools, narrowed for sub-agents by
``[tools.subagents.tools]``, then by the agent's risk profile (``allowed_tools`` / ``excluded_tools``). A tool not
offered cannot run: the runtime answers a call to it with a refusal the model reads."""

from __future__ import annotations

from bot.config import ToolList
from bot.profiles import RiskProfile
from bot.records import SessionRole

SESSIONS_SPAWN = "sessions_spawn"
SUBAGENTS = "subagents"
SESSIONS_LIST = "sessions_list"
SESSIONS_HISTORY = "sessions_history"
SESSIONS_SEND = "sessions_send"
AGENTS_LIST = "agents_list"
MODEL_SWITCH = "model_switch"  # the main agent's own model; sub-agents inherit theirs and never switch it

_BY_ROLE: dict[SessionRole, frozenset[str]] = {
    SessionRole.MAIN: frozenset(
        {SESSIONS_SPAWN, SUBAGENTS, SESSIONS_LIST, SESSIONS_HISTORY, SESSIONS_SEND, AGENTS_LIST, MODEL_SWITCH}
    ),
    SessionRole.ORCHESTRATOR: frozenset({SESSIONS_SPAWN, SUBAGENTS, SESSIONS_LIST, SESSIONS_HISTORY}),
    SessionRole.LEAF: frozenset(),
}


def allowed_tools(role: SessionRole, subagent_tools: ToolList, risk: RiskProfile | None = None) -> frozenset[str]:
    """Tools for a session of ``role``; for sub-agents, ``[tools.subagents.tools]`` narrows further (deny wins; a
    non-empty allow list means allow-only); ``risk``, the agent's risk profile, narrows every session."""
    tools = _BY_ROLE[role]
    if role != SessionRole.MAIN:
        if subagent_tools.allow:
            tools = tools & frozenset(subagent_tools.allow)
        tools = tools - frozenset(subagent_tools.deny)
    return frozenset(tool for tool in tools if risk is None or risk.allows(tool))
