"""The core's thread port on Discord: create public threads (or forum posts) and post into them, saying
exactly which permission is missing when Discord would refuse."""

from __future__ import annotations

import discord

from bot.core.threads import ThreadRef, ThreadUnavailable

NEEDED = (("create_public_threads", "Create Public Threads"), ("send_messages_in_threads", "Send Messages in Threads"))


class DiscordThreads:
    def __init__(self, client: discord.Client) -> None:
        self._client = client

    async def create_thread(self, channel_id: int, name: str, auto_archive_minutes: int) -> ThreadRef:
        channel = self._client.get_channel(channel_id)
        if channel is None:
            try:
                channel = await self._client.fetch_channel(channel_id)
            except discord.HTTPException as error:
                raise ThreadUnavailable(f"I cannot see channel {channel_id} ({error.text or error.status}).") from None
        if not isinstance(channel, (discord.TextChannel, discord.ForumChannel)):
            raise ThreadUnavailable("threads can only be created in text and forum channels.")
        me = channel.guild.me
        permissions = channel.permissions_for(me)
        missing = [label for flag, label in NEEDED if not getattr(permissions, flag)]
        if missing:
            raise ThreadUnavailable(f"I am missing the {' and '.join(missing)} permission in #{channel.name}.")
        try:
            if isinstance(channel, discord.ForumChannel):
                created = await channel.create_thread(
                    name=name, auto_archive_duration=auto_archive_minutes, content="⚙️ Sub-agent session"
                )
                thread = created.thread
            else:
                thread = await channel.create_thread(
                    name=name, type=discord.ChannelType.public_thread, auto_archive_duration=auto_archive_minutes
                )
        except discord.HTTPException as error:
            raise ThreadUnavailable(f"Discord refused to create the thread ({error.text or error.status}).") from None
        return ThreadRef(thread_id=thread.id, parent_channel_id=channel.id)

    async def post(self, thread_id: int, text: str) -> None:
        try:
            await self._client.get_partial_messageable(thread_id).send(
                text, allowed_mentions=discord.AllowedMentions.none()
            )
        except discord.HTTPException as error:
            raise ThreadUnavailable(f"could not post in thread {thread_id} ({error.text or error.status}).") from None

    async def is_open(self, thread_id: int) -> bool | None:
        try:
            channel = await self._client.fetch_channel(thread_id)
        except (discord.NotFound, discord.Forbidden):
            return False
        except discord.HTTPException:
            return None
        if isinstance(channel, discord.Thread):
            return not (channel.archived or channel.locked)
        return True

    async def archive(self, thread_id: int) -> None:
        try:
            await self._client.http.edit_channel(thread_id, archived=True, reason="thread-bound session ended")
        except discord.HTTPException as error:
            raise ThreadUnavailable(f"could not archive thread {thread_id} ({error.text or error.status}).") from None
