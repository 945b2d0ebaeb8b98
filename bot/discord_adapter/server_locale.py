"""Which language a post goes out in when nobody asked for it: its server's preferred locale.

Announcements, status messages, approval requests and notices answer no interaction, so they follow the server's
choice (Server Settings → Community → Server Primary Language), read from discord.py's cache; a DM, or a server the
bot does not see, gets English.
"""

from __future__ import annotations

import discord


def server_locale(client: discord.Client, channel_id: int, guild_id: int | None = None) -> discord.Locale | None:
    """The preferred locale of ``channel_id``'s server, else of ``guild_id``.

    ``channel_id`` may be a channel or a thread."""
    channel = client.get_channel(channel_id)
    guild = getattr(channel, "guild", None)
    if guild is None and guild_id is not None:
        guild = client.get_guild(guild_id)
    return guild.preferred_locale if isinstance(guild, discord.Guild) else None
