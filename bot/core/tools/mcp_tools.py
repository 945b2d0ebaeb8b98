"""Which MCP tools a session gets: the servers of its policy envelope (its agent's ``mcp_servers``, narrowed up its
chain of agent parents: a bounded delegate's caller, a ``spawn_subagent`` child's caller, and so on), each tool
filtered at every step by the envelope and the one policy (``tool_policy.admits_mcp_tool``); each call
a step of a durable run (:class:`bot.agents.journal.JournaledToolset`) whose result is redacted, then cut to the
tool-result limits (:mod:`bot.agents.result_caps`), before the journal records it."""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset

from bot.agents.journal import JournaledToolset
from bot.agents.mcp_servers import McpServers
from bot.agents.result_caps import CappedToolset, ResultLimits
from bot.core.context import CoreContext
from bot.core.tools.policy_envelope import PolicyEnvelopes
from bot.core.tools.tool_policy import admits_mcp_tool
from bot.records import Session
from bot.redaction import RedactedToolset


class McpTools:
    def __init__(self, ctx: CoreContext, servers: McpServers) -> None:
        self._ctx = ctx
        self._envelopes = PolicyEnvelopes(ctx)
        self._servers = servers

    async def toolsets(self, session: Session) -> list[AbstractToolset[Any]]:
        envelope = await self._envelopes.effective(session)

        def admitted(ctx: RunContext[Any], tool: ToolDefinition) -> bool:
            return envelope.admits(tool.name) and admits_mcp_tool(self._ctx.config, session, tool.name)

        # redacted and cut before the journal records a call's result, so a durable run's journal is clean and bounded
        limits = ResultLimits.of(self._ctx.config)
        return [
            JournaledToolset(
                CappedToolset(
                    RedactedToolset(self._servers.toolset(name).filtered(admitted), redact=self._ctx.redact),
                    limits=limits,
                )
            )
            for name in sorted(envelope.mcp_servers)
        ]
