"""Which conversation a Discord place belongs to: a guild channel, or a user's DMs with the bot."""

from __future__ import annotations


def conversation_for(*, channel_id: int, guild_id: int | None, user_id: int) -> str:
    if guild_id is None:
        return f"discord:dm:{user_id}"
    return f"discord:channel:{channel_id}"
