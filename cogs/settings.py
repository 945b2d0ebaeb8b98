"""``/settings thread-bindings`` and ``/settings budgets``: per-server options for admins (Manage Server, checked
at run time; the ``default_permissions`` on the group is only Discord's UI hint)."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.core.budgets.limits import BUDGET_KEYS
from bot.core.errors import UserError
from bot.discord_adapter.replies import send_text
from bot.discord_adapter.settings_view import render_budgets, render_thread_bindings
from bot.discord_adapter.thinking import thinks_privately
from bot.durations import MAX_LIFETIME_HOURS
from bot.i18n import Words, localized

if TYPE_CHECKING:
    from bot.app import ThreadboundBot


@app_commands.guild_only()
@app_commands.default_permissions(manage_guild=True)
class SettingsCog(commands.GroupCog, group_name="settings", group_description=localized("cmd-settings")):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="thread-bindings", description=localized("cmd-settings-thread-bindings"))
    @app_commands.describe(
        enabled=localized("cmd-settings-thread-bindings-enabled"),
        idle_hours=localized("cmd-settings-thread-bindings-idle_hours"),
        max_age_hours=localized("cmd-settings-thread-bindings-max_age_hours"),
        spawn_subagent_sessions=localized("cmd-settings-thread-bindings-spawn_subagent_sessions"),
        auto_archive_minutes=localized("cmd-settings-thread-bindings-auto_archive_minutes"),
        moderator_role=localized("cmd-settings-thread-bindings-moderator_role"),
    )
    @thinks_privately
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
        guild_id = await _admin_only(interaction)
        settings = self.bot.people.settings
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
        await settings.update(guild_id, changes, actor_user_id=interaction.user.id)
        effective = await settings.effective(guild_id)
        await send_text(
            interaction, render_thread_bindings(effective, changed=bool(changes), locale=interaction.locale)
        )

    @app_commands.command(name="streaming", description=localized("cmd-settings-streaming"))
    @app_commands.describe(enabled=localized("cmd-settings-streaming-enabled"))
    @thinks_privately
    async def streaming(self, interaction: discord.Interaction, enabled: bool | None = None) -> None:
        guild_id = await _admin_only(interaction)
        settings = self.bot.people.settings
        if enabled is not None:
            await settings.update(guild_id, {"streaming": enabled}, actor_user_id=interaction.user.id)
        if await settings.streams(guild_id):
            said = localized("settings-streaming-on", interaction.locale)
        else:
            said = localized("settings-streaming-off", interaction.locale)
        await send_text(interaction, said)

    @app_commands.command(name="budgets", description=localized("cmd-settings-budgets"))
    @app_commands.describe(
        member_runs_per_hour=localized("cmd-settings-budgets-member_runs_per_hour"),
        member_tokens_per_day=localized("cmd-settings-budgets-member_tokens_per_day"),
        member_cost_per_day_usd=localized("cmd-settings-budgets-member_cost_per_day_usd"),
        member_concurrent_runs=localized("cmd-settings-budgets-member_concurrent_runs"),
        server_runs_per_hour=localized("cmd-settings-budgets-server_runs_per_hour"),
        server_tokens_per_day=localized("cmd-settings-budgets-server_tokens_per_day"),
        server_cost_per_day_usd=localized("cmd-settings-budgets-server_cost_per_day_usd"),
        inherit=localized("cmd-settings-budgets-inherit"),
    )
    @app_commands.choices(inherit=[app_commands.Choice(name=key, value=key) for key in BUDGET_KEYS])
    @thinks_privately
    async def budgets(
        self,
        interaction: discord.Interaction,
        member_runs_per_hour: app_commands.Range[int, 0, 1_000_000] | None = None,
        member_tokens_per_day: app_commands.Range[int, 0, 10**12] | None = None,
        member_cost_per_day_usd: app_commands.Range[float, 0, 1_000_000] | None = None,
        member_concurrent_runs: app_commands.Range[int, 0, 10_000] | None = None,
        server_runs_per_hour: app_commands.Range[int, 0, 1_000_000] | None = None,
        server_tokens_per_day: app_commands.Range[int, 0, 10**12] | None = None,
        server_cost_per_day_usd: app_commands.Range[float, 0, 1_000_000] | None = None,
        inherit: app_commands.Choice[str] | None = None,
    ) -> None:
        guild_id = await _admin_only(interaction)
        given = {
            "member_runs_per_hour": member_runs_per_hour,
            "member_tokens_per_day": member_tokens_per_day,
            "member_cost_per_day_usd": member_cost_per_day_usd,
            "member_concurrent_runs": member_concurrent_runs,
            "server_runs_per_hour": server_runs_per_hour,
            "server_tokens_per_day": server_tokens_per_day,
            "server_cost_per_day_usd": server_cost_per_day_usd,
        }
        changes = {key: _decimal(key, value) for key, value in given.items() if value is not None}
        cleared = inherit.value if inherit else None
        if cleared in changes:
            raise UserError(Words("refused-set-and-inherit", {"key": cleared}))
        limits = self.bot.people.budget_limits
        await limits.update(guild_id, changes, clear=cleared, actor_user_id=interaction.user.id)
        effective = await limits.effective(guild_id)
        await send_text(
            interaction, render_budgets(effective, changed=bool(changes or cleared), locale=interaction.locale)
        )


async def _admin_only(interaction: discord.Interaction) -> int:
    """The run-time check (after the private defer); the server's id."""
    if not interaction.permissions.manage_guild:
        raise UserError(Words("refused-settings-admin-only"))
    if interaction.guild_id is None:
        raise app_commands.NoPrivateMessage()
    return interaction.guild_id


def _decimal(key: str, value: float) -> Decimal:
    """A Discord number as the exact value typed, never in exponent form.

    Cost caps keep six decimals; a cap too small to keep is refused rather than turned into 0 (no cap)."""
    typed = Decimal(str(value)).quantize(Decimal("0.000001"))
    if value and not typed:
        raise UserError(Words("refused-cost-too-small", {"key": key, "value": str(value)}))
    whole = typed.to_integral_value()
    return whole if typed == whole else typed.normalize()


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(SettingsCog(bot))
