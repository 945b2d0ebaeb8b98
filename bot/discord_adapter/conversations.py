"""Who and where an interaction comes from, in the core's terms: the conversation, and the acting person."""

from __future__ import annotations

import discord

from bot.discord_adapter.moderation import moderates
from bot.records import Actor


def conversation_for(*, channel_id: int, guild_id: int | None, user_id: int) -> str:
    if guild_id is None:
        return f"discord:dm:{user_id}"
    return channel_conversation(channel_id)


def channel_conversation(channel_id: int) -> str:
    """The conversation of a server channel (a thread is a channel too)."""
    return f"discord:channel:{channel_id}"


def channel_id_of(interaction: discord.Interaction) -> int:
    """The channel a command or button was used in; Discord leaves it out only of interactions that have none."""
    if interaction.channel_id is None:
        raise ValueError(f"interaction {interaction.id} ({interaction.type.name}) came with no channel id")
    return interaction.channel_id


def channels_of(interaction: discord.Interaction) -> tuple[int, ...]:
    """The channel an interaction came from and, for a thread, the thread's parent channel."""
    channel_id = channel_id_of(interaction)
    if isinstance(interaction.channel, discord.Thread):
        return (channel_id, interaction.channel.parent_id)
    return (channel_id,)


def conversation_of(interaction: discord.Interaction) -> str:
    return conversation_for(
        channel_id=channel_id_of(interaction), guild_id=interaction.guild_id, user_id=interaction.user.id
    )


def actor_of(interaction: discord.Interaction, moderator_role_ids: list[int]) -> Actor:
    """The person acting, and whether they moderate here.

    It is checked per call, from the interaction's permissions."""
    roles = (role.id for role in getattr(interaction.user, "roles", []))
    moderator = moderates(interaction.permissions, roles, moderator_role_ids)
    return Actor(user_id=interaction.user.id, is_moderator=moderator, guild_id=interaction.guild_id)


def author_of(message: discord.Message, moderator_role_ids: list[int]) -> Actor:
    """A message's author, and whether they moderate in its channel.

    The rule is :func:`actor_of`'s: a thread has its parent channel's permissions; in a DM nobody moderates."""
    author, channel = message.author, message.channel
    guild_id = message.guild.id if message.guild else None
    if not isinstance(author, discord.Member) or not isinstance(channel, discord.abc.GuildChannel | discord.Thread):
        return Actor(user_id=author.id, is_moderator=False, guild_id=guild_id)
    try:
        permissions = channel.permissions_for(author)
    except discord.ClientException:  # a thread whose parent channel is not cached: the roles alone decide
        permissions = discord.Permissions.none()
    moderator = moderates(permissions, (role.id for role in author.roles), moderator_role_ids)
    return Actor(user_id=author.id, is_moderator=moderator, guild_id=guild_id)
