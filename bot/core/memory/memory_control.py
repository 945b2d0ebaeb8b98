"""``/memory list|forget``: what the bot remembers about a server's conversations, as people see and remove it.

A member sees and forgets only the memories stored from their own conversations in this server; an admin (Manage
Server, or a moderator) sees and forgets all of the server's. Forgetting another member's memory is audited. The
check is made here, at the time of the request, with the authority of the one person asking.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from bot.core.context import CoreContext
from bot.core.errors import UserError
from bot.i18n import Words
from bot.records import Memory
from storage.audit import AuditEntry

log = structlog.get_logger(__name__)
LISTED = 20  # the newest ones; the listing says how many more there are


@dataclass(frozen=True)
class MemoryListing:
    memories: list[Memory]
    total: int
    everyone: bool  # the whole server's (an admin's view), not only the member's own


class MemoryControl:
    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx

    async def listing(self, guild_id: int, user_id: int, *, admin: bool) -> MemoryListing:
        memories, total = await self._ctx.repos.memories.listed(guild_id, None if admin else user_id, LISTED)
        return MemoryListing(memories, total, admin)

    async def forget(self, guild_id: int, user_id: int, memory_id: int, *, admin: bool) -> Memory:
        """Forget memory ``memory_id`` of this server for ``user_id``; refused unless it is theirs or they admin."""
        memory = await self._ctx.repos.memories.get(memory_id)
        if memory is None or memory.guild_id != guild_id:
            raise UserError(Words("refused-no-memory", {"id": str(memory_id)}))
        theirs = memory.created_by_user_id == user_id
        if not theirs and not admin:
            raise UserError(Words("refused-memory-not-yours", {"id": str(memory_id)}))
        now = self._ctx.clock()
        async with self._ctx.repos.db.transaction() as tx:
            if not await self._ctx.repos.memories.delete(tx, memory_id):
                raise UserError(Words("refused-memory-forgotten", {"id": str(memory_id)}))
            if not theirs:
                detail = f"memory #{memory_id} of agent {memory.agent_id}: {memory.key}"
                entry = AuditEntry(guild_id, user_id, memory.created_by_user_id, "memory_forget", None, detail, now)
                await self._ctx.repos.audit.record(tx, entry)
        log.info("memory_forgotten_by_member", memory_id=memory_id, user_id=user_id, own=theirs)
        return memory
