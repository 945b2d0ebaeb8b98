"""Effective budget caps per server: a server's own values (``/settings budgets``) → ``[budgets]`` → no cap.
Cached in memory (:mod:`bot.core.server_cache`); every write is audited."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from pydantic import ValidationError

from bot.config import BudgetsConfig
from bot.core.context import CoreContext
from bot.core.errors import UserError
from bot.core.server_cache import ServerCache
from storage.audit import AuditEntry

BUDGET_KEYS = tuple(BudgetsConfig.model_fields)


@dataclass(frozen=True)
class Limits:
    values: dict[str, Decimal]  # 0: no cap
    sources: dict[str, str]  # "this server", "[budgets]" or "default"


class BudgetLimits:
    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx
        self._cache = ServerCache(ctx.repos.guild_budgets.get)

    async def effective(self, guild_id: int | None) -> Limits:
        server = await self._cache.get(guild_id) if guild_id is not None else {}
        configured = self._ctx.config.budgets
        values: dict[str, Decimal] = {}
        sources: dict[str, str] = {}
        for key in BUDGET_KEYS:
            if key in server:
                values[key], sources[key] = server[key], "this server"
            else:
                values[key] = Decimal(getattr(configured, key))
                sources[key] = "[budgets]" if key in configured.model_fields_set else "default"
        return Limits(values, sources)

    async def update(
        self, guild_id: int, changes: dict[str, Decimal], *, clear: str | None = None, actor_user_id: int
    ) -> None:
        """Set this server's own values, audited in one transaction.

        ``clear``'s own value is dropped, so it inherits again."""
        if not changes and clear is None:
            return
        try:
            BudgetsConfig(**{**self._ctx.config.budgets.model_dump(), **changes})  # the config file's own checks
        except ValidationError as invalid:
            raise UserError(invalid.errors()[0]["msg"]) from None
        now = self._ctx.clock()
        detail = ", ".join([f"{key}={value}" for key, value in changes.items()] + ([f"{clear}=inherit"] * bool(clear)))
        async with self._ctx.repos.db.transaction() as tx:
            if clear is not None:
                await self._ctx.repos.guild_budgets.clear(tx, guild_id, clear)
            if changes:
                await self._ctx.repos.guild_budgets.set(tx, guild_id, changes, by=actor_user_id, now=now)
            await self._ctx.repos.audit.record(
                tx, AuditEntry(guild_id, actor_user_id, None, "budgets", None, detail, now)
            )
        self._cache.written(guild_id)
