"""Effective thread-binding settings per server: admins' per-server values → ``[channels.discord.thread_bindings]``
→ ``[session.thread_bindings]`` → defaults. Cached in memory (:mod:`bot.core.server_cache`); writes are audited."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.config import ThreadBindingSettings
from bot.core.context import CoreContext
from bot.core.server_cache import ServerCache
from bot.i18n import Words
from storage.audit import AuditEntry

BINDING_KEYS = ("enabled", "idle_hours", "max_age_hours", "spawn_subagent_sessions", "auto_archive_minutes")


@dataclass(frozen=True)
class EffectiveSettings:
    thread_bindings: ThreadBindingSettings
    moderator_role_id: int | None
    sources: dict[str, str]


class GuildSettings:
    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx
        self._cache = ServerCache(ctx.repos.guild_settings.get)

    async def effective(self, guild_id: int | None) -> EffectiveSettings:
        server = await self._cache.get(guild_id) if guild_id is not None else {}
        discord_overrides = self._ctx.config.channels.discord.thread_bindings.model_dump(exclude_none=True)
        global_set = self._ctx.config.session.thread_bindings.model_fields_set
        values = self._ctx.config.thread_bindings().model_dump()
        sources = {}
        for key in BINDING_KEYS:
            if key in server:
                values[key], sources[key] = server[key], "this server"
            elif key in discord_overrides:
                sources[key] = "channels.discord.thread_bindings"
            elif key in global_set:
                sources[key] = "session.thread_bindings"
            else:
                sources[key] = "default"
        sources["moderator_role"] = "this server" if "moderator_role_id" in server else "not set"
        return EffectiveSettings(ThreadBindingSettings(**values), server.get("moderator_role_id"), sources)

    async def streams(self, guild_id: int | None) -> bool:
        """Whether answers here appear while they are written: the server's choice, else the config's."""
        server = await self._cache.get(guild_id) if guild_id is not None else {}
        return bool(server.get("streaming", self._ctx.config.discord.stream_answers))

    async def update(self, guild_id: int, changes: dict[str, Any], *, actor_user_id: int) -> None:
        if not changes:
            return
        ThreadBindingSettings(
            **{
                **self._ctx.config.thread_bindings().model_dump(),
                **{k: v for k, v in changes.items() if k in BINDING_KEYS},
            }
        )
        now = self._ctx.clock()
        detail = ", ".join(f"{key}={value}" for key, value in changes.items())
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.guild_settings.update(tx, guild_id, changes, by=actor_user_id, now=now)
            await self._ctx.repos.audit.record(
                tx, AuditEntry(guild_id, actor_user_id, None, "settings", None, detail, now)
            )
        self._cache.written(guild_id)


def binding_gate(settings: ThreadBindingSettings) -> Words | None:
    """Why a thread-bound spawn is refused by configuration, in the spec's words; ``None`` if allowed."""
    if not settings.enabled:
        return Words("refused-bindings-disabled")
    if not settings.spawn_subagent_sessions:
        return Words("refused-binding-spawns-disabled")
    return None
