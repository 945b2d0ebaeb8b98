"""``/memory list|forget``: what the bot remembers about this server's conversations. A member sees and forgets the
memories stored from their own conversations; an admin (Manage Server, or a moderator) all of the server's (checked
at run time, in the core)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_adapter.memory_views import render_memories
from bot.discord_adapter.replies import send_text
from bot.discord_adapter.thinking import thinks_privately
from bot.i18n import localized

if TYPE_CHECKING:
    from bot.app import ThreadboundBot


@app_commands.guild_only()
class MemoryCog(commands.GroupCog, group_name="memory", group_description=localized("cmd-memory")):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot
        super().__init__()

    async def _asker(self, interaction: discord.Interaction) -> tuple[int, int, bool]:
        """The server, the member, and whether they admin here (Manage Server, or a moderator)."""
        if interaction.guild_id is None:
            raise app_commands.NoPrivateMessage()
        actor = await self.bot.actor(interaction)
        return interaction.guild_id, actor.user_id, interaction.permissions.manage_guild or actor.is_moderator

    @app_commands.command(name="list", description=localized("cmd-memory-list"))
    @thinks_privately
    async def list_(self, interaction: discord.Interaction) -> None:
        guild_id, user_id, admin = await self._asker(interaction)
        listing = await self.bot.people.memories.listing(guild_id, user_id, admin=admin)
        await send_text(interaction, render_memories(listing, interaction.locale))

    @app_commands.command(name="forget", description=localized("cmd-memory-forget"))
    @app_commands.describe(id=localized("cmd-memory-forget-id"))
    @thinks_privately
    async def forget(self, interaction: discord.Interaction, id: app_commands.Range[int, 1]) -> None:
        guild_id, user_id, admin = await self._asker(interaction)
        memory = await self.bot.people.memories.forget(guild_id, user_id, id, admin=admin)
        forgot = localized(
            "memory-forgotten", interaction.locale, id=str(memory.id), agent=memory.agent_id, key=memory.key
        )
        await send_text(interaction, forgot)


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(MemoryCog(bot))
