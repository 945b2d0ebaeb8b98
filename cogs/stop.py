"""``/stop``: abort this conversation's main-agent turn and every sub-agent it spawned, cascading."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_adapter.conversations import conversation_of
from bot.discord_adapter.replies import send_text
from bot.discord_adapter.thinking import thinks_privately
from bot.i18n import localized

if TYPE_CHECKING:
    from bot.app import ThreadboundBot


class StopCog(commands.Cog):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot

    @app_commands.command(name="stop", description=localized("cmd-stop"))
    @thinks_privately
    async def stop(self, interaction: discord.Interaction) -> None:
        actor = await self.bot.actor(interaction)
        stopped = await self.bot.control.stop(actor, conversation_of(interaction))
        await send_text(interaction, stopped.render(interaction.locale))


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(StopCog(bot))
