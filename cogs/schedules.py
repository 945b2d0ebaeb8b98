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
from bot.records import ScheduleSource, ScheduleSpec

if TYPE_CHECKING:
    from bot.app import ThreadboundBot


def managed_guild(interaction: discord.Interaction) -> discord.Guild:
    """The server whose schedules the member manages; refused without Manage Server."""
    if interaction.guild is None:
        raise app_commands.NoPrivateMessage()
    if not interaction.permissions.manage_guild:
        raise UserError("You need the Manage Server permission to manage schedules.")
    return interaction.guild


def target_channel(
    interaction: discord.Interaction, guild: discord.Guild, chosen: discord.TextChannel | discord.Thread | None
) -> discord.TextChannel | discord.Thread:
    """Where the schedule posts: the chosen channel, else this one; refused where the bot cannot post."""
    channel = chosen or interaction.channel
    if not isinstance(channel, (discord.TextChannel, discord.Thread)):
        raise UserError("Schedules post in a text channel or thread; pick one with the channel option.")
    if (missing := missing_posting_permission(channel, guild.me)) is not None:
        raise UserError(f"I cannot post in {channel.mention}: I am missing the {missing} permission there.")
    return channel


@app_commands.guild_only()
@app_commands.default_permissions(manage_guild=True)
class SchedulesCog(commands.GroupCog, group_name="schedule", group_description="Agents that run on a schedule"):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="add", description="Run an agent on a cron schedule and post its answer")
    @app_commands.describe(
        name="A name for this schedule, unique in this server",
        cron="Five crontab fields: minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5",
        agent="Agent id from the config, e.g. main",
        prompt="What the agent should do at each firing",
        channel="Where its answer is posted (default: here)",
        timezone="Time zone of the cron fields, an IANA name such as Europe/Madrid (default: UTC)",
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

    @app_commands.command(name="list", description="This server's schedules and when each fires next")
    @thinks_privately
    async def list_(self, interaction: discord.Interaction) -> None:
        guild = managed_guild(interaction)
        views = await self.bot.schedules.listing(guild.id, channel_ids_of(guild))
        await send_text(interaction, render_listing(views, interaction.locale))

    @app_commands.command(name="remove", description="Stop and delete a schedule added with /schedule add")
    @app_commands.describe(name="The schedule's name (those in config.toml are removed there)")
    @thinks_privately
    async def remove(self, interaction: discord.Interaction, name: str) -> None:
        guild = managed_guild(interaction)
        removed = await self.bot.schedules.remove(
            name.strip(), guild_id=guild.id, actor_user_id=interaction.user.id, channel_ids=channel_ids_of(guild)
        )
        await send_text(interaction, f"Removed schedule **{removed.spec.name}** (id {removed.id}).")

    @remove.autocomplete("name")
    async def _name_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        if interaction.guild is None:
            return []
        views = await self.bot.schedules.listing(interaction.guild.id, channel_ids_of(interaction.guild))
        names = [view.schedule.spec.name for view in views if view.schedule.source is ScheduleSource.SLASH]
        return [app_commands.Choice(name=n[:100], value=n) for n in names if current.lower() in n.lower()][:25]


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(SchedulesCog(bot))
