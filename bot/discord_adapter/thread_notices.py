"""Telling a member privately that a bound thread is someone else's: a plain message has no ephemeral reply, so the
notice goes by DM; to a member who takes no DMs from the bot, it is a reply to their message that pings only them
and deletes itself after :data:`REPLY_SECONDS`. Other bots are told nothing."""

from __future__ import annotations

import discord
import structlog

from bot.discord_adapter.splitting import DISCORD_MESSAGE_LIMIT
from bot.text import shortened

log = structlog.get_logger(__name__)

REPLY_SECONDS = 60.0


async def tell_privately(message: discord.Message, notice: str) -> None:
    """Give ``notice`` to the author of ``message``: by DM, else in a self-deleting reply that pings only them."""
    author = message.author
    if author.bot:
        return
    try:
        await author.send(shortened(notice, DISCORD_MESSAGE_LIMIT))
        return
    except discord.HTTPException as error:  # 403 50007: they take no DMs from the bot (or from this server)
        log.info("thread_notice_not_dmed", user_id=author.id, status=error.status, code=error.code)
    try:
        await message.reply(
            shortened(f"{author.mention} {notice}", DISCORD_MESSAGE_LIMIT),
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=[author], replied_user=True),
            delete_after=REPLY_SECONDS,
        )
    except discord.HTTPException as error:
        log.warning("thread_notice_failed", user_id=author.id, channel_id=message.channel.id, error=str(error))
