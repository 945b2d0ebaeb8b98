"""Which MCP tools a session gets: the servers its agent lists (``mcp_servers``), each tool filtered at every step by
the one policy (:func:`bot.core.tool_policy.admits_mcp_tool`). A bounded delegate gets only servers and tools its
caller has too, up the chain of bounded delegations (a ``spawn_subagent`` child is bounded by its caller, too)."""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset

from bot.agents.mcp_servers import McpServers
from bot.config import Config
from bot.core.tool_policy import admits_mcp_tool
from bot.records import Delegation, Session
from storage.repositories import Repositories


class McpTools:
    def __init__(self, config: Config, repos: Repositories, servers: McpServers) -> None:
        self._config = config
        self._repos = repos
        self._servers = servers

    async def toolsets(self, session: Session) -> list[AbstractToolset[Any]]:
        chain = await self._bounded_chain(session)
        if chain is None:
            return []
        servers = set(self._config.agents.list[session.agent_id].mcp_servers)
        for holder in chain[1:]:
            servers &= set(self._config.agents.list[holder.agent_id].mcp_servers)

        def admitted(ctx: RunContext[Any], tool: ToolDefinition) -> bool:
            return all(admits_mcp_tool(self._config, holder, tool.name) for holder in chain)

        return [self._servers.toolset(name).filtered(admitted) for name in sorted(servers)]

    async def _bounded_chain(self, session: Session) -> list[Session] | None:
        """The session, then each caller whose tools bound it (a bounded delegate's or a ``spawn_subagent`` child's
        caller, and so on); ``None`` when a caller is gone, so that nothing it might not have had is granted."""
        chain = [session]
        while chain[-1].delegation in (Delegation.BOUNDED, Delegation.SUBAGENT):
            caller = await self._repos.sessions.get(chain[-1].requester_session_key or "")
            if caller is None:
                return None
            chain.append(caller)
        return chain
