"""The memory tools a turn is offered (``memory_store``, ``memory_recall``, ``memory_forget``), and its recalled block.

They are offered in a server only (a DM has no memory), when ``[memory] enabled``, and as the session's policy
envelope admits each (its agent's risk profile, narrowed by its agent parents'); a delegate that is not agentic is
offered none, as it is offered no tools at all. Each call acts on the run's
:class:`~bot.core.memory.scope.MemoryScope`, resolved when the turn starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from pydantic_ai import RunContext, Tool

from bot.core.context import CoreContext
from bot.core.memory.memories import Memories
from bot.core.memory.scope import MemoryScope, MemoryScopes
from bot.records import Delegation, Run, Session

MEMORY_STORE = "memory_store"
MEMORY_RECALL = "memory_recall"
MEMORY_FORGET = "memory_forget"
MEMORY_TOOLS = (MEMORY_STORE, MEMORY_RECALL, MEMORY_FORGET)
_DELEGATES = (Delegation.BOUNDED, Delegation.INDEPENDENT)


class ScopeNamed(Protocol):
    """A turn's deps, as the memory tools read them: the memory scope the turn acts on."""

    @property
    def memory_scope(self) -> MemoryScope | None: ...


def _scope(ctx: RunContext[ScopeNamed]) -> MemoryScope:
    scope = ctx.deps.memory_scope
    assert scope is not None, "memory tools are offered only to a turn with a memory scope"
    return scope


def _tools(memories: Memories) -> dict[str, Tool[Any]]:
    """The memory tools, built once: a tool's schema is read from its signature, which takes a while."""

    async def memory_store(ctx: RunContext[ScopeNamed], key: str, content: str) -> dict[str, Any]:
        return await memories.store(_scope(ctx), key, content)

    async def memory_recall(ctx: RunContext[ScopeNamed], query: str, limit: int = 5) -> dict[str, Any]:
        return await memories.recall(_scope(ctx), query, limit)

    async def memory_forget(ctx: RunContext[ScopeNamed], key: str) -> dict[str, Any]:
        return await memories.forget(_scope(ctx), key)

    return {
        MEMORY_STORE: Tool(
            memory_store,
            takes_ctx=True,
            name=MEMORY_STORE,
            description=(
                "Remember something for later conversations in this server: a short key and the content. Storing "
                "under a key you used before replaces that memory."
            ),
        ),
        MEMORY_RECALL: Tool(
            memory_recall,
            takes_ctx=True,
            name=MEMORY_RECALL,
            description="Search what you (and the agents whose memory you may read) remembered in this server.",
        ),
        MEMORY_FORGET: Tool(
            memory_forget, takes_ctx=True, name=MEMORY_FORGET, description="Forget one of your memories, by key."
        ),
    }


class MemoryTurns:
    """A turn's memory: its tools, the memories recalled into a top-level turn's prompt, and its auto-save."""

    def __init__(self, ctx: CoreContext, scopes: MemoryScopes, memories: Memories) -> None:
        self._ctx = ctx
        self._scopes = scopes
        self._memories = memories
        self._tools = _tools(memories)

    async def setup(
        self, run: Run, session: Session, admits: Callable[[str], bool]
    ) -> tuple[list[Tool[Any]], str, MemoryScope | None]:
        """The turn's memory tools, its recalled block, and the scope its tools act on.

        No tools: none offered; an empty block: nothing recalled; the turn's deps carry the scope. ``admits``:
        whether the session's policy envelope admits a tool (its risk profile, narrowed by its agent parents')."""
        if not self._ctx.config.memory.enabled or session.guild_id is None:
            return [], "", None
        scope = await self._scopes.of(run, session)
        tools = [tool for name, tool in self._tools.items() if admits(name)]
        if session.delegation in _DELEGATES and not self._ctx.config.runtime_profile_of(session.agent_id).agentic:
            tools = []
        recalled = await self._memories.injected(scope, run.task)
        await self._memories.auto_save(scope, run.task)  # after recalling: a message does not recall itself
        return tools, recalled, scope
