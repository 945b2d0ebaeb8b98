"""Which tools a session is offered: the one resolver. Its depth role's tools, narrowed for sub-agents by
``[tools.subagents.tools]``, then by the agent's risk profile (``allowed_tools`` / ``excluded_tools``); a delegate
child is offered nothing unless its agent is agentic, never ``delegate`` itself, and — bounded — nothing its caller
was not offered. ``delegate`` is offered to agents with a risk profile when there is
another agent; its delegation policy is enforced by the tool, in its contract words. A tool not offered cannot run:
the runtime answers a call to it with a refusal the model reads."""

from __future__ import annotations

from bot.config import Config, ToolList
from bot.profiles import RiskProfile
from bot.records import Delegation, Session, SessionRole

SESSIONS_SPAWN = "sessions_spawn"
SUBAGENTS = "subagents"
SESSIONS_LIST = "sessions_list"
SESSIONS_HISTORY = "sessions_history"
SESSIONS_SEND = "sessions_send"
AGENTS_LIST = "agents_list"
MODEL_SWITCH = "model_switch"  # the main agent's own model; sub-agents inherit theirs and never switch it
SPAWN_SUBAGENT = "spawn_subagent"
DELEGATE = "delegate"
SELF_GATED = frozenset({SPAWN_SUBAGENT})  # offered whatever the risk profile: they refuse in its own words

_BY_ROLE: dict[SessionRole, frozenset[str]] = {
    SessionRole.MAIN: frozenset(
        {SESSIONS_SPAWN, SUBAGENTS, SESSIONS_LIST, SESSIONS_HISTORY, SESSIONS_SEND, AGENTS_LIST, MODEL_SWITCH}
        | {SPAWN_SUBAGENT, DELEGATE}
    ),
    SessionRole.ORCHESTRATOR: frozenset(
        {SESSIONS_SPAWN, SUBAGENTS, SESSIONS_LIST, SESSIONS_HISTORY, SPAWN_SUBAGENT, DELEGATE}
    ),
    SessionRole.LEAF: frozenset(),
}


def role_tools(role: SessionRole) -> frozenset[str]:
    """The session tools a depth role may have at most."""
    return _BY_ROLE[role]


def all_session_tools() -> frozenset[str]:
    return frozenset().union(*_BY_ROLE.values())


def allowed_tools(
    role: SessionRole, subagent_tools: ToolList, risk: RiskProfile | None = None, delegation: Delegation | None = None
) -> frozenset[str]:
    """Tools for a session of ``role``; for sub-agents, ``[tools.subagents.tools]`` narrows further (deny wins; a
    non-empty allow list means allow-only); ``risk``, the agent's risk profile, narrows every session but the
    self-gated tools. A ``spawn_subagent`` child is offered only ``spawn_subagent``, which refuses it (depth-1 cap)."""
    tools = frozenset({SPAWN_SUBAGENT}) if delegation is Delegation.SUBAGENT else _BY_ROLE[role]
    if role != SessionRole.MAIN:
        if subagent_tools.allow:
            tools = tools & frozenset(subagent_tools.allow)
        tools = tools - frozenset(subagent_tools.deny)
    return frozenset(tool for tool in tools if risk is None or tool in SELF_GATED or risk.allows(tool))


def admits_mcp_tool(config: Config, session: Session, tool: str) -> bool:
    """Whether ``session`` may call the MCP tool ``tool``, named ``<server>__<tool>``.

    The server must be one its agent lists. Not for a delegate that is not agentic, not when its risk profile excludes
    it, not when ``[tools.subagents.tools]`` denies it to a sub-agent (an allow list there, like ``allowed_tools``,
    admits MCP tools automatically)."""
    delegated = session.delegation in (Delegation.BOUNDED, Delegation.INDEPENDENT)
    if delegated and not config.runtime_profile_of(session.agent_id).agentic:
        return False
    risk = config.risk_profile_of(session.agent_id)
    if risk is not None and not risk.admits_mcp(tool):
        return False
    return session.role == SessionRole.MAIN or tool not in config.tools.subagents.tools.deny


def offered_tools(config: Config, session: Session, ceiling: frozenset[str] | None = None) -> frozenset[str]:
    """Everything ``session`` is offered; ``ceiling`` is a bounded delegate's caller's own set."""
    delegated = session.delegation in (Delegation.BOUNDED, Delegation.INDEPENDENT)
    if delegated and not config.runtime_profile_of(session.agent_id).agentic:
        return frozenset()  # a non-agentic delegate answers in one model call
    tools = allowed_tools(
        session.role, config.tools.subagents.tools, config.risk_profile_of(session.agent_id), session.delegation
    )
    if delegated or len(config.agents.list) < 2 or config.agents.list[session.agent_id].risk_profile is None:
        tools -= {DELEGATE}  # a delegate never delegates again; nobody to delegate to; no risk profile
    return tools & ceiling if ceiling is not None else tools


def usable_tools(config: Config, session: Session, offered: frozenset[str]) -> frozenset[str]:
    """What ``session`` may really use of the tools it is ``offered``: a self-gated tool its risk profile refuses is
    not (a bounded delegate's ceiling: it must not run what its caller is refused)."""
    risk = config.risk_profile_of(session.agent_id)
    return frozenset(tool for tool in offered if risk is None or tool not in SELF_GATED or risk.allows(tool))
