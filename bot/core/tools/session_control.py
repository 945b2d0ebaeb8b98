"""The agent-facing session tools' one counterpart in the core (:class:`SessionControl`).

Each tool call reaches the room that decides it: the session tools, ``spawn_subagent`` or ``delegate``.
"""

from __future__ import annotations

from typing import Any

from bot.config import Config
from bot.core.runs.spawn_policy import SpawnArgs
from bot.core.tools.agent_tools import AgentTools
from bot.core.tools.delegate_reach import roster
from bot.core.tools.delegation import Delegating
from bot.core.tools.session_toolset import Caller
from bot.core.tools.subagent_spawn import SubagentSpawn


class ToolControl:
    """What agents ask of the core through session tools, each handed to its room."""

    def __init__(
        self, config: Config, tools: AgentTools, subagent_spawn: SubagentSpawn, delegating: Delegating
    ) -> None:
        self._config = config
        self._tools = tools
        self._subagent_spawn = subagent_spawn
        self._delegating = delegating

    async def tool_spawn(self, caller: Caller, args: SpawnArgs) -> dict[str, Any]:
        return await self._tools.tool_spawn(caller, args)

    async def tool_agents_list(self, caller: Caller) -> dict[str, Any]:
        return await self._tools.tool_agents_list(caller)

    async def tool_sessions_list(self, caller: Caller) -> dict[str, Any]:
        return await self._tools.tool_sessions_list(caller)

    async def tool_sessions_history(
        self, caller: Caller, session_key: str, limit: int, include_tools: bool
    ) -> dict[str, Any]:
        return await self._tools.tool_sessions_history(caller, session_key, limit, include_tools)

    async def tool_sessions_send(self, caller: Caller, session_key: str, message: str) -> dict[str, Any]:
        return await self._tools.tool_sessions_send(caller, session_key, message)

    async def tool_subagents(
        self, caller: Caller, action: str, target: str | None, message: str | None
    ) -> dict[str, Any]:
        return await self._tools.tool_subagents(caller, action, target, message)

    async def tool_model_switch(self, caller: Caller, model: str) -> dict[str, Any]:
        return await self._tools.tool_model_switch(caller, model)

    async def tool_spawn_subagent(self, caller: Caller, prompt: str, memory_from: list[str] | None = None) -> str:
        return await self._subagent_spawn.spawn(caller, prompt, memory_from)

    async def tool_delegate(self, caller: Caller, raw: dict[str, Any]) -> dict[str, Any]:
        return await self._delegating.handle(caller, raw)

    def delegate_roster(self, caller: Caller) -> list[str]:
        return roster(self._config, caller.session.agent_id)
