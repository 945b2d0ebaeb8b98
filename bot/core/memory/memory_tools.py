"""The memory tools a turn is offered (``memory_store``, ``memory_recall``, ``memory_forget``), and its recalled block.

They are offered in a server only (a DM has no memory), when ``[memory] enabled``, and as the session's policy
envelope admits each (its agent's risk profile, narrowed by its agent parents'); a delegate that is not agentic is
offered none, as it is offered no tools at all. Each call acts on the run's
:class:`~bot.core.memory.scope.MemoryScope`, resolved when the turn starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic_ai import Tool
from pydantic_ai.toolsets import FunctionToolset

from bot.core.context import CoreContext
from bot.core.memory.memories import Memories
from bot.core.memory.scope import MemoryScope, MemoryScopes
from bot.records import Delegation, Run, Session

MEMORY_STORE = "memory_store"
MEMORY_RECALL = "memory_recall"
MEMORY_FORGET = "memory_forget"
MEMORY_TOOLS = (MEMORY_STORE, MEMORY_RECALL, MEMORY_FORGET)
_DELEGATES = (Delegation.BOUNDED, Delegation.INDEPENDENT)


def _tools(memories: Memories, scope: MemoryScope) -> dict[str, Tool[Any]]:
    async def memory_store(key: str, content: str) -> dict[str, Any]:
        return await memories.store(scope, key, content)

    async def memory_recall(query: str, limit: int = 5) -> dict[str, Any]:
        return await memories.recall(scope, query, limit)

    async def memory_forget(key: str) -> dict[str, Any]:
        return await memories.forget(scope, key)

    return {
        MEMORY_STORE: Tool(
            memory_store,
            name=MEMORY_STORE,
            description=(
                "Remember something for later conversations in this server: a short key and the content. Storing "
                "under a key you used before replaces that memory."
            ),
        ),
        MEMORY_RECALL: Tool(
            memory_recall,
            name=MEMORY_RECALL,
            description="Search what you (and the agents whose memory you may read) remembered in this server.",
        ),
        MEMORY_FORGET: Tool(memory_forget, name=MEMORY_FORGET, description="Forget one of your memories, by key."),
    }


class MemoryTurns:
    """A turn's memory: its tools, the memories recalled into a top-level turn's prompt, and its auto-save."""

    def __init__(self, ctx: CoreContext, scopes: MemoryScopes, memories: Memories) -> None:
        self._ctx = ctx
        self._scopes = scopes
        self._memories = memories

    async def setup(
        self, run: Run, session: Session, admits: Callable[[str], bool]
    ) -> tuple[FunctionToolset[Any] | None, str]:
        """The turn's memory toolset (``None``: not offered) and its recalled block (empty: none).

        ``admits``: whether the session's policy envelope admits a tool (its risk profile, narrowed by its agent
        parents')."""
        if not self._ctx.config.memory.enabled or session.guild_id is None:
            return None, ""
        scope = await self._scopes.of(run, session)
        tools = [tool for name, tool in _tools(self._memories, scope).items() if admits(name)]
        if session.delegation in _DELEGATES and not self._ctx.config.runtime_profile_of(session.agent_id).agentic:
            tools = []
        recalled = await self._memories.injected(scope, run.task)
        await self._memories.auto_save(scope, run.task)  # after recalling: a message does not recall itself
        return (FunctionToolset(tools) if tools else None), recalled
