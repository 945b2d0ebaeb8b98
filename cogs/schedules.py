"""``/schedule add|list|remove``: scheduled agent jobs of this server, for members with Manage Server (checked at
run time; the ``default_permissions`` on the group is only Discord's UI hint)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.core.errors import UserError
from bot.discord_adapter.replies import send_text
from bot.discord_adapter.schedule_views import (
    channel_ids_of,
    missing_posting_permission,
    render_added,
    render_listing,
)
from bot.discord_adapter.thinking import thinks_privately
from bot.i18n import Words, localized
from bot.records import ScheduleSource, ScheduleSpec

if TYPE_CHECKING:
    from bot.app import ThreadboundBot


def managed_guild(interaction: discord.Interaction) -> discord.Guild:
    """The server whose schedules the member manages; refused without Manage Server."""
    if interaction.guild is None:
        raise app_commands.NoPrivateMessage()
    if not interaction.permissions.manage_guild:
        raise UserError(Words("refused-schedules-admin-only"))
    return interaction.guild


def target_channel(
    interaction: discord.Interaction, guild: discord.Guild, chosen: discord.TextChannel | discord.Thread | None
) -> discord.TextChannel | discord.Thread:
    """Where the schedule posts: the chosen channel, else this one; refused where the bot cannot post."""
    channel = chosen or interaction.channel
    if not isinstance(channel, (discord.TextChannel, discord.Thread)):
        raise UserError(Words("refused-schedule-channel"))
    if (missing := missing_posting_permission(channel, guild.me)) is not None:
        raise UserError(Words("refused-schedule-cannot-post", {"channel": channel.mention, "missing": missing}))
    return channel


@app_commands.guild_only()
@app_commands.default_permissions(manage_guild=True)
class SchedulesCog(commands.GroupCog, group_name="schedule", group_description=localized("cmd-schedule")):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="add", description=localized("cmd-schedule-add"))
    @app_commands.describe(
        name=localized("cmd-schedule-add-name"),
        cron=localized("cmd-schedule-add-cron"),
        agent=localized("cmd-schedule-add-agent"),
        prompt=localized("cmd-schedule-add-prompt"),
        channel=localized("cmd-schedule-add-channel"),
        timezone=localized("cmd-schedule-add-timezone"),
    )
    @thinks_privately
    async def add(
        self,
        interaction: discord.Interaction,
        name: str,
        cron: str,
        agent: str,
        prompt: str,
        channel: discord.TextChannel | discord.Thread | None = None,
        timezone: str = "UTC",
    ) -> None:
        guild = managed_guild(interaction)
        where = target_channel(interaction, guild, channel)
        spec = ScheduleSpec(name, cron, timezone.strip(), agent.strip(), prompt, where.id)
        view = await self.bot.schedules.add(
            spec, guild_id=guild.id, actor_user_id=interaction.user.id, channel_ids=channel_ids_of(guild)
        )
        await send_text(interaction, render_added(view, interaction.locale))

    @add.autocomplete("agent")
    async def _agent_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        agents = sorted(agent for agent, config in self.bot.config.agents.list.items() if config.enabled)
        return [app_commands.Choice(name=a, value=a) for a in agents if a.startswith(current.lower())][:25]

    @app_commands.command(name="list", description=localized("cmd-schedule-list"))
    @thinks_privately
    async def list_(self, interaction: discord.Interaction) -> None:
        guild = managed_guild(interaction)
        views = await self.bot.schedules.listing(guild.id, channel_ids_of(guild))
        await send_text(interaction, render_listing(views, interaction.locale))

    @app_commands.command(name="remove", description=localized("cmd-schedule-remove"))
    @app_commands.describe(name=localized("cmd-schedule-remove-name"))
    @thinks_privately
    async def remove(self, interaction: discord.Interaction, name: str) -> None:
        guild = managed_guild(interaction)
        removed = await self.bot.schedules.remove(
            name.strip(), guild_id=guild.id, actor_user_id=interaction.user.id, channel_ids=channel_ids_of(guild)
        )
        said = localized("schedule-removed", interaction.locale, name=removed.spec.name, id=str(removed.id))
        await send_text(interaction, said)

    @remove.autocomplete("name")
    async def _name_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        if interaction.guild is None:
            return []
        views = await self.bot.schedules.listing(interaction.guild.id, channel_ids_of(interaction.guild))
        names = [view.schedule.spec.name for view in views if view.schedule.source is ScheduleSource.SLASH]
        return [app_commands.Choice(name=n[:100], value=n) for n in names if current.lower() in n.lower()][:25]


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(SchedulesCog(bot))
