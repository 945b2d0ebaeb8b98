"""``/focus``, ``/unfocus``, ``/agents`` and ``/session idle|max-age``: binding sub-agent sessions to threads."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_adapter.autocomplete import target_choices
from bot.discord_adapter.conversations import channel_id_of, conversation_for
from bot.discord_adapter.replies import send_text
from bot.discord_adapter.run_views import render_agents
from bot.discord_adapter.spoken import spoken
from bot.discord_adapter.thinking import thinks_privately
from bot.i18n import localized

if TYPE_CHECKING:
    from bot.app import ThreadboundBot


def parent_conversation(interaction: discord.Interaction) -> str:
    """Targets are the sub-agents of the channel: inside a thread, of the thread's parent channel."""
    channel = interaction.channel
    channel_id = (
        channel.parent_id if isinstance(channel, discord.Thread) and channel.parent_id else channel_id_of(interaction)
    )
    return conversation_for(channel_id=channel_id, guild_id=interaction.guild_id, user_id=interaction.user.id)


class FocusCog(commands.Cog):
    session = app_commands.Group(name="session", description=localized("cmd-session"))

    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot

    @app_commands.command(name="focus", description=localized("cmd-focus"))
    @app_commands.describe(target=localized("cmd-focus-target"))
    @thinks_privately
    async def focus(self, interaction: discord.Interaction, target: str) -> None:
        channel = interaction.channel
        reply = await self.bot.bindings.focus(
            await self.bot.actor(interaction),
            conversation=parent_conversation(interaction),
            target=target,
            channel_id=channel_id_of(interaction),
            parent_channel_id=channel.parent_id if isinstance(channel, discord.Thread) else None,
            is_dm=interaction.guild_id is None,
        )
        await send_text(interaction, spoken(reply, interaction.locale))

    @focus.autocomplete("target")
    async def _target_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await target_choices(self.bot.control, parent_conversation(interaction), current, interaction.locale)

    @app_commands.command(name="unfocus", description=localized("cmd-unfocus"))
    @thinks_privately
    async def unfocus(self, interaction: discord.Interaction) -> None:
        actor = await self.bot.actor(interaction)
        unfocused = await self.bot.bindings.unfocus(actor, channel_id_of(interaction))
        await send_text(interaction, spoken(unfocused, interaction.locale))

    @app_commands.command(name="agents", description=localized("cmd-agents"))
    @thinks_privately
    async def agents(self, interaction: discord.Interaction) -> None:
        found = await self.bot.bindings.agents(parent_conversation(interaction))
        await send_text(interaction, render_agents(found, interaction.locale))

    @session.command(name="idle", description=localized("cmd-session-idle"))
    @app_commands.describe(duration=localized("cmd-session-idle-duration"))
    @thinks_privately
    async def idle(self, interaction: discord.Interaction, duration: str | None = None) -> None:
        actor = await self.bot.actor(interaction)
        reply = await self.bot.bindings.lifetime(actor, channel_id_of(interaction), "idle", duration)
        await send_text(interaction, spoken(reply, interaction.locale))

    @session.command(name="max-age", description=localized("cmd-session-max-age"))
    @app_commands.describe(duration=localized("cmd-session-max-age-duration"))
    @thinks_privately
    async def max_age(self, interaction: discord.Interaction, duration: str | None = None) -> None:
        actor = await self.bot.actor(interaction)
        reply = await self.bot.bindings.lifetime(actor, channel_id_of(interaction), "max-age", duration)
        await send_text(interaction, spoken(reply, interaction.locale))


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(FocusCog(bot))
