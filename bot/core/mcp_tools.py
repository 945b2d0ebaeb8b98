"""Which MCP tools a session gets: the servers of its policy envelope (its agent's ``mcp_servers``, narrowed up its
chain of agent parents: a bounded delegate's caller, a ``spawn_subagent`` child's caller, and so on), each tool
filtered at every step by the envelope and the one policy (:func:`bot.core.tool_policy.admits_mcp_tool`); each call
a step of a durable run (:class:`bot.agents.journal.JournaledToolset`), recorded with its secrets redacted."""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset

from bot.agents.journal import JournaledToolset
from bot.agents.mcp_servers import McpServers
from bot.config import Config
from bot.core.policy_envelope import PolicyEnvelopes
from bot.core.tool_policy import admits_mcp_tool
from bot.records import Session
from bot.redaction import RedactedToolset, Redactor
from storage.repositories import Repositories


class McpTools:
    def __init__(self, config: Config, repos: Repositories, servers: McpServers, redact: Redactor) -> None:
        self._config = config
        self._redact = redact
        self._envelopes = PolicyEnvelopes(config, repos)
        self._servers = servers

    async def toolsets(self, session: Session) -> list[AbstractToolset[Any]]:
        envelope = await self._envelopes.effective(session)

        def admitted(ctx: RunContext[Any], tool: ToolDefinition) -> bool:
            return envelope.admits(tool.name) and admits_mcp_tool(self._config, session, tool.name)

        return [  # the journal records a call's result redacted
            JournaledToolset(RedactedToolset(self._servers.toolset(name).filtered(admitted), redact=self._redact))
            for name in sorted(envelope.mcp_servers)
        ]
