"""The action budget, ``max_actions_per_hour``: every ``spawn_subagent`` and ``delegate`` launch is
one action, charged to the calling session's budget. A ``spawn_subagent`` child and a bounded delegate spend their
caller's budget (the same tracker); an independent delegate has its own. The count is the launches recorded in the
last hour (each launched session stores the budget it was charged to), so a refused call costs nothing and the
budget survives a restart. The limit is the budget owner's (``max_actions_per_hour`` of its agent's runtime profile):
a bounded child spends its caller's budget on its caller's terms.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.core.context import CoreContext
from bot.keyed_locks import KeyedLocks
from bot.records import Session

BUDGET_EXHAUSTED = "Rate limit exceeded: action budget exhausted"
HOUR = 3600.0


class BudgetExhausted(Exception):
    """No action left this hour."""


class ActionBudget:
    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx
        self._charging: KeyedLocks[str] = KeyedLocks()

    @asynccontextmanager
    async def charge(self, caller: Session) -> AsyncIterator[str]:
        """Hold the caller's budget while one launch is persisted; yields the key to store as its ``charged_to``.
        Raises :class:`BudgetExhausted` when the hour's actions are spent (launches that arrive together, from one
        model response, are counted one after the other)."""
        key = caller.budget_key
        owner = caller if key == caller.key else await self._ctx.repos.sessions.get(key)
        limit = self._ctx.config.runtime_profile_of((owner or caller).agent_id).max_actions_per_hour
        async with self._charging.hold(key):
            if await self._ctx.repos.sessions.charged_since(key, self._ctx.clock() - HOUR) >= limit:
                raise BudgetExhausted(BUDGET_EXHAUSTED)
            yield key
