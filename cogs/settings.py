"""``/settings thread-bindings``: per-server thread-binding options for admins (Manage Server, checked at run
time; the ``default_permissions`` on the group is only Discord's UI hint)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.core.errors import UserError
from bot.discord_adapter.replies import send_text
from bot.durations import MAX_LIFETIME_HOURS

if TYPE_CHECKING:
    from bot.app import ThreadboundBot


@app_commands.guild_only()
@app_commands.default_permissions(manage_guild=True)
class SettingsCog(commands.GroupCog, group_name="settings", group_description="Server settings for threadbound"):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="thread-bindings", description="Show or change thread-binding settings here")
    @app_commands.describe(
        enabled="Allow thread-bound sessions at all",
        idle_hours="Unbind a thread after this many quiet hours (0 = never)",
        max_age_hours="Unbind a thread this many hours after binding (0 = never)",
        spawn_subagent_sessions="Allow spawning sub-agents into new threads",
        auto_archive_minutes="The least Discord auto-archive for threads the bot creates",
        moderator_role="Members with this role may kill and steer anyone's runs",
    )
    async def thread_bindings(
        self,
        interaction: discord.Interaction,
        enabled: bool | None = None,
        idle_hours: app_commands.Range[float, 0, MAX_LIFETIME_HOURS] | None = None,
        max_age_hours: app_commands.Range[float, 0, MAX_LIFETIME_HOURS] | None = None,
        spawn_subagent_sessions: bool | None = None,
        auto_archive_minutes: Literal[60, 1440, 4320, 10080] | None = None,
        moderator_role: discord.Role | None = None,
    ) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        if not interaction.permissions.manage_guild:
            raise UserError("You need the Manage Server permission to view or change these settings.")
        if interaction.guild_id is None:
            raise app_commands.NoPrivateMessage()
        settings = self.bot.orchestrator.guild_settings
        changes = {
            key: value
            for key, value in {
                "enabled": enabled,
                "idle_hours": idle_hours,
                "max_age_hours": max_age_hours,
                "spawn_subagent_sessions": spawn_subagent_sessions,
                "auto_archive_minutes": auto_archive_minutes,
                "moderator_role_id": moderator_role.id if moderator_role else None,
            }.items()
            if value is not None
        }
        await settings.update(interaction.guild_id, changes, actor_user_id=interaction.user.id)
        effective = await settings.effective(interaction.guild_id)
        values = effective.thread_bindings.model_dump()
        lines = ["Updated." if changes else "Thread-binding settings here:"]
        lines += [f"{key}: {values[key]} ({source})" for key, source in effective.sources.items() if key in values]
        role = f"<@&{effective.moderator_role_id}>" if effective.moderator_role_id else "none"
        lines.append(f"moderator_role: {role} ({effective.sources['moderator_role']})")
        await send_text(interaction, "\n".join(lines))


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(SettingsCog(bot))
