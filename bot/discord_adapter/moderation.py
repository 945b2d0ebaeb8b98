"""Whether a member moderates where they act: one rule for commands, buttons and an agent's turn.

Moderators have *Manage Threads* or *Manage Messages* in the channel, or a moderator role (the config's and the
server's own). A command or a click carries the member's resolved permissions; an agent's tool acting for the
person whose turn it is asks here, at the moment it acts, from the member as Discord knows them now.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import discord
import structlog

log = structlog.get_logger(__name__)


def moderates(permissions: discord.Permissions, role_ids: Iterable[int], moderator_role_ids: Iterable[int]) -> bool:
    return permissions.manage_threads or permissions.manage_messages or bool(set(role_ids) & set(moderator_role_ids))


class MemberModeration:
    """The core's :class:`bot.core.oversight.run_authority.Moderation`, answered from Discord's view of the member."""

    def __init__(self, client: discord.Client, roles: Callable[[int | None], Awaitable[list[int]]]) -> None:
        self._client = client
        self._roles = roles

    async def is_moderator(self, user_id: int, guild_id: int | None, channel_id: int | None) -> bool:
        guild = self._client.get_guild(guild_id) if guild_id is not None else None
        if guild is None:  # a DM, or a server the bot has left: nobody there moderates someone else's run
            return False
        member = guild.get_member(user_id)
        if member is None:
            try:
                member = await guild.fetch_member(user_id)
            except discord.HTTPException as error:  # left the server (404), or Discord cannot say: not a moderator
                log.info("moderator_unknown", user_id=user_id, guild_id=guild_id, status=getattr(error, "status", None))
                return False
        return moderates(
            await self._permissions(guild, member, channel_id),
            (r.id for r in member.roles),
            await self._roles(guild_id),
        )

    @staticmethod
    async def _permissions(guild: discord.Guild, member: discord.Member, channel_id: int | None) -> discord.Permissions:
        """The member's permissions in the channel (a thread: its parent's), fetched when not cached; the server's
        when Discord cannot say (the channel is gone, or a thread's parent is unknown)."""
        channel = guild.get_channel_or_thread(channel_id) if channel_id is not None else None
        if channel is None and channel_id is not None:
            try:
                fetched = await guild.fetch_channel(channel_id)
            except discord.HTTPException:
                fetched = None
            channel = fetched if isinstance(fetched, discord.abc.GuildChannel | discord.Thread) else None
        if channel is None:
            return member.guild_permissions
        try:
            return channel.permissions_for(member)
        except discord.ClientException:  # a thread whose parent channel is not cached
            return member.guild_permissions
