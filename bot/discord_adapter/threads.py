"""The core's thread port on Discord: create public threads (or forum posts) and post into them, saying
exactly which permission is missing when Discord would refuse; and tell a thread that people closed from one
that Discord archived because it was quiet."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from typing import Any

import discord

from bot.config import AUTO_ARCHIVE_MINUTES, AutoArchiveMinutes
from bot.core.threads.port import ThreadRef, ThreadUnavailable

_CHECKS_PER_TURN = 1000  # bound threads checked between two turns of the event loop

ARCHIVE_TOLERANCE = timedelta(seconds=1)


def archived_for_inactivity(thread: Mapping[str, Any]) -> bool:
    """Whether a thread payload (REST or gateway) says Discord archived it by itself: its archive time is at
    least its auto-archive duration after its last activity (its last message, else its creation). A person
    archiving a thread does it sooner, since Discord would otherwise have archived it already."""
    metadata = thread.get("thread_metadata") or {}
    if not metadata.get("archived") or metadata.get("locked"):
        return False
    archived_at = datetime.fromisoformat(metadata["archive_timestamp"])
    last_activity = discord.utils.snowflake_time(int(thread.get("last_message_id") or thread["id"]))
    quiet_for = timedelta(minutes=int(metadata.get("auto_archive_duration", 0)))
    return archived_at + ARCHIVE_TOLERANCE >= last_activity + quiet_for


def closed_by_people(thread: Mapping[str, Any]) -> bool:
    """Locked, or archived by someone rather than by Discord's inactivity timer."""
    metadata = thread.get("thread_metadata") or {}
    locked, archived = bool(metadata.get("locked")), bool(metadata.get("archived"))
    return locked or (archived and not archived_for_inactivity(thread))


def _archive_duration(minutes: int) -> AutoArchiveMinutes:
    """The core picks from the durations Discord accepts; any other value is a bug, named here rather than sent."""
    for allowed in AUTO_ARCHIVE_MINUTES:
        if minutes == allowed:
            return allowed
    raise ValueError(f"{minutes} minutes is not an auto-archive duration Discord accepts {AUTO_ARCHIVE_MINUTES}")


NEEDED = (("create_public_threads", "Create Public Threads"), ("send_messages_in_threads", "Send Messages in Threads"))


class DiscordThreads:
    def __init__(self, client: discord.Client) -> None:
        self._client = client

    async def create_thread(self, channel_id: int, name: str, auto_archive_minutes: int) -> ThreadRef:
        channel = self._client.get_channel(channel_id)
        if channel is None:
            channel = await self._fetch(channel_id)
        if isinstance(channel, discord.Thread):
            channel = channel.parent or await self._fetch(channel.parent_id)  # a sibling, never a nested thread
        if not isinstance(channel, (discord.TextChannel, discord.ForumChannel)):
            raise ThreadUnavailable("threads can only be created in text and forum channels.")
        me = channel.guild.me
        permissions = channel.permissions_for(me)
        missing = [label for flag, label in NEEDED if not getattr(permissions, flag)]
        if missing:
            raise ThreadUnavailable(f"I am missing the {' and '.join(missing)} permission in #{channel.name}.")
        auto_archive_duration = _archive_duration(auto_archive_minutes)
        try:
            if isinstance(channel, discord.ForumChannel):
                created = await channel.create_thread(
                    name=name, auto_archive_duration=auto_archive_duration, content="⚙️ Sub-agent session"
                )
                thread = created.thread
            else:
                thread = await channel.create_thread(
                    name=name, type=discord.ChannelType.public_thread, auto_archive_duration=auto_archive_duration
                )
        except discord.HTTPException as error:
            raise ThreadUnavailable(f"Discord refused to create the thread ({error.text or error.status}).") from None
        return ThreadRef(thread_id=thread.id, parent_channel_id=channel.id)

    async def _fetch(self, channel_id: int) -> Any:
        try:
            return await self._client.fetch_channel(channel_id)
        except discord.HTTPException as error:
            raise ThreadUnavailable(f"I cannot see channel {channel_id} ({error.text or error.status}).") from None

    async def post(self, thread_id: int, text: str) -> None:
        try:
            await self._client.get_partial_messageable(thread_id).send(
                text, allowed_mentions=discord.AllowedMentions.none()
            )
        except discord.HTTPException as error:
            raise ThreadUnavailable(f"could not post in thread {thread_id} ({error.text or error.status}).") from None

    async def closed_among(self, guild_id: int, channel_ids: Collection[int]) -> dict[int, bool | None]:
        """One request for the server's active threads answers for those among them; a channel still in the cache
        that is not a thread is open; any other (an archived or deleted thread) is asked about on its own."""
        try:
            payload = await self._client.http.get_active_threads(guild_id)
        except discord.HTTPException:
            active: dict[int, Mapping[str, Any]] = {}
        else:
            active = {int(thread["id"]): thread for thread in payload["threads"]}
        closed: dict[int, bool | None] = {}
        for checked, channel_id in enumerate(channel_ids, start=1):
            if checked % _CHECKS_PER_TURN == 0:  # tens of thousands of bindings: the event loop runs meanwhile
                await asyncio.sleep(0)
            cached = self._client.get_channel(channel_id)
            if channel_id in active:
                closed[channel_id] = closed_by_people(active[channel_id])
            elif cached is not None and not isinstance(cached, discord.Thread):
                closed[channel_id] = False
            else:
                closed[channel_id] = await self._is_closed(channel_id)
        return closed

    async def _is_closed(self, thread_id: int) -> bool | None:
        try:
            payload = await self._client.http.get_channel(thread_id)
        except (discord.NotFound, discord.Forbidden):
            return True
        except discord.HTTPException:
            return None
        return closed_by_people(payload)

    async def archive(self, thread_id: int) -> None:
        try:
            await self._client.http.edit_channel(thread_id, archived=True, reason="thread-bound session ended")
        except discord.HTTPException as error:
            raise ThreadUnavailable(f"could not archive thread {thread_id} ({error.text or error.status}).") from None
