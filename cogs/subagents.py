"""``/subagents``: spawn sub-agents from Discord (more actions arrive with the control issue)."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import ThreadboundBot
from bot.config import THINKING_LEVELS
from bot.core.orchestrator import Origin, SpawnRequest
from bot.discord_adapter.conversations import conversation_for


class SubagentsCog(commands.GroupCog, group_name="subagents", group_description="Spawn and manage sub-agents"):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="spawn", description="Start a sub-agent on a task; its result is posted here")
    @app_commands.describe(
        agent="Agent id from the config, e.g. main",
        task="What the sub-agent should do",
        model="Model as <provider>/<model>; defaults to the configured one",
        thinking="Reasoning effort, for models that support it",
    )
    @app_commands.choices(thinking=[app_commands.Choice(name=level, value=level) for level in THINKING_LEVELS])
    async def spawn(
        self,
        interaction: discord.Interaction,
        agent: str,
        task: str,
        model: str | None = None,
        thinking: str | None = None,
    ) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        accepted = await self.bot.orchestrator.spawn(
            SpawnRequest(
                agent_id=agent,
                task=task,
                model=model,
                thinking=thinking,
                origin=Origin(
                    user_id=interaction.user.id,
                    channel_id=interaction.channel_id,
                    guild_id=interaction.guild_id,
                    conversation=conversation_for(
                        channel_id=interaction.channel_id, guild_id=interaction.guild_id, user_id=interaction.user.id
                    ),
                ),
            )
        )
        await interaction.followup.send(
            f"Spawned subagent {accepted.agent_id} (session {accepted.session_key}, run {accepted.short_run_id}).",
            ephemeral=True,
        )

    @spawn.autocomplete("agent")
    async def _agent_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        agents = sorted(self.bot.config.agents.list)
        return [app_commands.Choice(name=a, value=a) for a in agents if a.startswith(current.lower())][:25]


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(SubagentsCog(bot))
