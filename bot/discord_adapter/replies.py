"""Replying to an interaction with text of any length: split on lines, or attached when very long.

The note on an attached text is in the language of the member who asked."""

from __future__ import annotations

import io
from collections.abc import Sequence

import discord

from bot.discord_adapter.splitting import split_message
from bot.i18n import localized

MAX_PARTS = 3


async def send_text(
    interaction: discord.Interaction,
    text: str,
    *,
    filename: str = "output.txt",
    attachments: Sequence[discord.File] = (),
) -> None:
    """Follow up (after a defer) with ``text``, privately, ``attachments`` going with its last message; mentions in
    it never ping."""
    parts = split_message(text)
    quiet = discord.AllowedMentions.none()
    if len(parts) <= MAX_PARTS:
        for part in parts[:-1]:
            await interaction.followup.send(part, ephemeral=True, allowed_mentions=quiet)
        await interaction.followup.send(parts[-1], files=list(attachments), ephemeral=True, allowed_mentions=quiet)
        return
    note = f"{parts[0]}\n{localized('reply-attached', interaction.locale, file=filename)}"
    if len(note) > 2000:
        note = localized("reply-attached-long", interaction.locale, file=filename, characters=len(text))
    file = discord.File(io.BytesIO(text.encode("utf-8")), filename)
    await interaction.followup.send(note, files=[file, *attachments], ephemeral=True, allowed_mentions=quiet)
