"""One error surface for every slash command (after Red's ``CommandTree.on_error``): each failure becomes a
clear ephemeral reply, sent through whichever channel the interaction still allows; never a traceback."""

from __future__ import annotations

import discord
import structlog
from discord import app_commands

from bot.core.errors import UserError
from bot.discord_adapter.splitting import DISCORD_MESSAGE_LIMIT
from bot.i18n import localized
from bot.text import shortened

log = structlog.get_logger(__name__)


async def send_ephemeral(interaction: discord.Interaction, text: str) -> None:
    """Reply privately whether or not the interaction was already acknowledged; a reply longer than Discord
    accepts is cut (Discord would reject it, leaving the user on "thinking…")."""
    text = shortened(text, DISCORD_MESSAGE_LIMIT)
    allowed = discord.AllowedMentions.none()
    if not interaction.response.is_done():
        await interaction.response.send_message(text, ephemeral=True, allowed_mentions=allowed)
    elif not interaction.is_expired():
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=allowed)
    else:
        log.warning("interaction_expired_before_error_reply", interaction_id=interaction.id, text=text)


def message_for(interaction: discord.Interaction, error: app_commands.AppCommandError) -> str:
    """The reply for a failed command, in the member's language."""
    original = getattr(error, "original", error)
    locale = interaction.locale
    if isinstance(original, UserError):
        return localized("refusal", locale, reason=original.render(locale))
    if isinstance(error, app_commands.BotMissingPermissions):
        return localized("refused-bot-missing-permissions", locale, missing=_permissions(error.missing_permissions))
    if isinstance(error, app_commands.MissingPermissions):
        return localized("refused-missing-permissions", locale, missing=_permissions(error.missing_permissions))
    if isinstance(error, app_commands.NoPrivateMessage):
        return localized("refused-server-only", locale)
    if isinstance(error, app_commands.CommandOnCooldown):
        return localized("refused-cooldown", locale, seconds=f"{error.retry_after:.0f}")
    if isinstance(error, app_commands.CheckFailure):
        return localized("refused-check-failed", locale)
    if isinstance(error, app_commands.TransformerError):
        return localized("refusal", locale, reason=str(error))
    name = interaction.command.qualified_name if interaction.command else None
    return localized("command-failed", locale, command=name or "none")


def _permissions(names: list[str]) -> str:
    """Discord's permission names as its settings show them (English there too)."""
    return ", ".join(name.replace("_", " ").title() for name in names)


class ThreadboundTree(app_commands.CommandTree):
    async def on_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
        original = getattr(error, "original", error)
        if not isinstance(original, UserError):
            log.error(
                "app_command_failed",
                command=interaction.command.qualified_name if interaction.command else None,
                exc_info=original,
            )
        try:
            await send_ephemeral(interaction, message_for(interaction, error))
        except discord.HTTPException:
            log.warning("error_reply_failed", interaction_id=interaction.id, exc_info=True)
