"""Thread lifecycle events: a bound thread that people archive, lock or delete is unbound at once; one that
Discord archived because it was quiet stays bound (the next message reopens it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord.ext import commands

from bot.discord_adapter.threads import closed_by_people

if TYPE_CHECKING:
    from bot.app import ThreadboundBot


class ThreadEventsCog(commands.Cog):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot

    @commands.Cog.listener()
    async def on_raw_thread_update(self, payload: discord.RawThreadUpdateEvent) -> None:
        if closed_by_people(payload.data):
            await self.bot.orchestrator.unbind(payload.thread_id)

    @commands.Cog.listener()
    async def on_raw_thread_delete(self, payload: discord.RawThreadDeleteEvent) -> None:
        await self.bot.orchestrator.unbind(payload.thread_id)


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(ThreadEventsCog(bot))
