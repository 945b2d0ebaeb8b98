"""What an agent may call, and why not the rest: ``/subagents tools``. For each place the agent can run — a
conversation's main agent, a sub-agent at each depth — the tools the one resolver (:mod:`bot.core.tools.tool_policy`)
offers it there, and, for each tool it withholds, the first rule that withholds it. MCP servers are asked for their
tools live; one that cannot start is named with why."""

from __future__ import annotations

from dataclasses import dataclass

from bot.agents.mcp_servers import McpServers, McpUnavailable
from bot.config import Config
from bot.core.errors import UserError
from bot.core.files.attached_files import ATTACH_FILE
from bot.core.memory.memory_tools import MEMORY_TOOLS
from bot.core.tools.tool_policy import SELF_GATED, admits_mcp_tool, all_session_tools, offered_tools, role_tools
from bot.i18n import Words
from bot.records import ControlScope, Session, SessionKind, SessionRole


@dataclass(frozen=True)
class Placement:
    where: Words  # e.g. "As a sub-agent at depth 1 (orchestrator)"
    offered: list[str]
    withheld: list[tuple[Words, list[str]]]  # why, and the tools it withholds


@dataclass(frozen=True)
class ToolReport:
    agent_id: str
    risk_profile: str | None
    runtime_profile: str | None
    servers: dict[str, Words | str]  # server → "N tool(s)", or why it is unavailable as the server said
    placements: list[Placement]


class ToolReports:
    def __init__(self, config: Config, servers: McpServers) -> None:
        self._config = config
        self._servers = servers

    async def report(self, agent_id: str) -> ToolReport:
        agents = self._config.agents.list
        if agent_id not in agents:
            raise UserError(
                Words("refused-unknown-agent", {"agent": agent_id, "configured": ", ".join(sorted(agents))})
            )
        agent = agents[agent_id]
        servers: dict[str, Words | str] = {}
        mcp_tools: list[str] = []
        for name in agent.mcp_servers:
            try:
                names = await self._servers.tool_names(name)
            except McpUnavailable as unavailable:
                servers[name] = str(unavailable).removeprefix(f"MCP server '{name}' is ")
                continue
            servers[name] = Words("tools-server-count", {"count": len(names)})
            mcp_tools += names
        placements = [self._placement(where, session, mcp_tools) for where, session in self._places(agent_id)]
        return ToolReport(agent_id, agent.risk_profile, agent.runtime_profile, servers, placements)

    def _places(self, agent_id: str) -> list[tuple[Words, Session]]:
        max_depth = self._config.agents.defaults.subagents.max_spawn_depth
        places = [(Words("tools-place-main"), _session(agent_id, 0, SessionRole.MAIN))]
        for depth in range(1, max_depth + 1):
            role = SessionRole.LEAF if depth >= max_depth else SessionRole.ORCHESTRATOR
            where = Words("tools-place-subagent", {"depth": depth, "role": Words("session-role", {"role": role.value})})
            places.append((where, _session(agent_id, depth, role)))
        return places

    def _placement(self, where: Words, session: Session, mcp_tools: list[str]) -> Placement:
        session_tools = offered_tools(self._config, session)
        offered = sorted(session_tools) + [tool for tool in mcp_tools if admits_mcp_tool(self._config, session, tool)]
        withheld: dict[str, tuple[Words, list[str]]] = {}  # by the reason's English: one line per reason

        def withhold(why: Words, tool: str) -> None:
            withheld.setdefault(str(why), (why, []))[1].append(tool)

        for tool in sorted(all_session_tools() - session_tools) + [t for t in mcp_tools if t not in offered]:
            withhold(self._why_not(session, tool), tool)
        risk = self._config.risk_profile_of(session.agent_id)
        memory = MEMORY_TOOLS if self._config.memory.enabled else ()  # in a server's conversations; a DM has none
        for tool in (*memory, *((ATTACH_FILE,) if self._config.files.enabled else ())):
            if risk is None or risk.allows(tool):
                offered.append(tool)
            else:
                withhold(self._risk_refusal(session, tool), tool)
        return Placement(where, offered, list(withheld.values()))

    def _risk_refusal(self, session: Session, tool: str) -> Words:
        risk = self._config.risk_profile_of(session.agent_id)
        how = "excluded" if risk is not None and tool in risk.excluded_tools else "not-allowed"
        return Words("tools-why-risk", {"how": how, "profile": self._config.agents.list[session.agent_id].risk_profile})

    def _why_not(self, session: Session, tool: str) -> Words:
        """The first rule that withholds ``tool`` from ``session``, in the resolver's order."""
        risk = self._config.risk_profile_of(session.agent_id)
        subagent_tools = self._config.tools.subagents.tools
        sub_agent = session.role != SessionRole.MAIN
        mcp = "__" in tool
        if not mcp and tool not in role_tools(session.role):
            return Words("tools-why-leaf") if session.role == SessionRole.LEAF else Words("tools-why-main-only")
        if sub_agent and (
            tool in subagent_tools.deny or (not mcp and subagent_tools.allow and tool not in subagent_tools.allow)
        ):
            return Words("tools-why-subagents")
        if risk is not None and tool not in SELF_GATED and not (risk.admits_mcp(tool) if mcp else risk.allows(tool)):
            return self._risk_refusal(session, tool)
        return Words("tools-why-delegate")  # the one rule left: delegate's


def _session(agent_id: str, depth: int, role: SessionRole) -> Session:
    """A session of ``agent_id`` placed at ``depth`` with ``role``, to ask the resolver about."""
    return Session(
        key=f"agent:{agent_id}:report",
        agent_id=agent_id,
        kind=SessionKind.MAIN if depth == 0 else SessionKind.SUBAGENT,
        depth=depth,
        role=role,
        requester_session_key=None,
        label=None,
        guild_id=None,
        channel_id=0,
        owner_user_id=None,
        created_at=0.0,
        control_scope=ControlScope.NONE if role == SessionRole.LEAF else ControlScope.CHILDREN,
    )
