"""``/usage [member] [period]``: what a member's runs used and cost, by agent and by day, and the caps they count
against. Anyone may see their own; another member's only a moderator (checked at run time)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.core.errors import UserError
from bot.core.people.usage_report import Period
from bot.discord_adapter.replies import send_text
from bot.discord_adapter.thinking import thinks_privately
from bot.discord_adapter.usage_views import render_usage, usage_chart
from bot.i18n import Words, localized

if TYPE_CHECKING:
    from bot.app import ThreadboundBot


class UsageCog(commands.Cog):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot

    @app_commands.command(name="usage", description=localized("cmd-usage"))
    @app_commands.describe(
        member=localized("cmd-usage-member"),
        period=localized("cmd-usage-period"),
    )
    @thinks_privately
    async def usage(
        self,
        interaction: discord.Interaction,
        member: discord.User | None = None,
        period: Literal["day", "week", "month"] = "week",
    ) -> None:
        actor = await self.bot.actor(interaction)
        user_id = member.id if member is not None else actor.user_id
        if user_id != actor.user_id and not actor.is_moderator:
            raise UserError(Words("refused-usage-of-another"))
        report = await self.bot.orchestrator.usage_report(
            guild_id=interaction.guild_id, user_id=user_id, period=Period(period)
        )
        chart = await usage_chart(report, interaction.locale)
        shown = render_usage(report, actor.user_id, interaction.locale)
        await send_text(interaction, shown, attachments=[chart] if chart else [])


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(UsageCog(bot))
