"""Who and where an interaction comes from, in the core's terms: the conversation, and the acting person."""

from __future__ import annotations

import discord

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
    """The channel an interaction came from and, when that is a thread, the channel the thread is in."""
    channel_id = channel_id_of(interaction)
    if isinstance(interaction.channel, discord.Thread):
        return (channel_id, interaction.channel.parent_id)
    return (channel_id,)


def conversation_of(interaction: discord.Interaction) -> str:
    return conversation_for(
        channel_id=channel_id_of(interaction), guild_id=interaction.guild_id, user_id=interaction.user.id
    )


def actor_of(interaction: discord.Interaction, moderator_role_ids: list[int]) -> Actor:
    """Moderators: Manage Threads or Manage Messages here, or a configured moderator role (checked per call)."""
    permissions = interaction.permissions
    roles = {role.id for role in getattr(interaction.user, "roles", [])}
    moderator = permissions.manage_threads or permissions.manage_messages or bool(roles & set(moderator_role_ids))
    return Actor(user_id=interaction.user.id, is_moderator=moderator, guild_id=interaction.guild_id)
