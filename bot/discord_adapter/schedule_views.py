"""How schedules look in Discord: ``/schedule`` replies, with next firings as Discord timestamps (each reader sees
their own time zone), and which of a server's channels a schedule may name."""

from __future__ import annotations

import discord

from bot.core.people.schedule_control import ScheduleView
from bot.records import ScheduleSource

POSTING_PERMISSIONS = {
    "view_channel": "View Channel",
    "send_messages": "Send Messages",
}
THREAD_POSTING_PERMISSIONS = {"view_channel": "View Channel", "send_messages_in_threads": "Send Messages in Threads"}


def channel_ids_of(guild: discord.Guild) -> set[int]:
    """Every channel and thread of the server the bot knows: where its config.toml schedules may post."""
    return {channel.id for channel in guild.channels} | {thread.id for thread in guild.threads}


def missing_posting_permission(channel: discord.TextChannel | discord.Thread, me: discord.Member) -> str | None:
    """The first permission the bot lacks to post in ``channel``, or ``None``.

    It is named as Discord names it."""
    permissions = channel.permissions_for(me)
    needed = THREAD_POSTING_PERMISSIONS if isinstance(channel, discord.Thread) else POSTING_PERMISSIONS
    return next((label for flag, label in needed.items() if not getattr(permissions, flag)), None)


def _next(view: ScheduleView) -> str:
    return f"next <t:{int(view.next_at)}:R>" if view.next_at is not None else "no future date matches"


def render_line(view: ScheduleView) -> str:
    schedule, spec = view.schedule, view.schedule.spec
    source = "config.toml" if schedule.source is ScheduleSource.CONFIG else f"added by <@{schedule.created_by}>"
    return (
        f"**{spec.name}** (id {schedule.id}, {source}): `{spec.cron}` {spec.timezone} → {spec.agent_id} in "
        f"<#{spec.channel_id}>, {_next(view)}"
    )


def render_added(view: ScheduleView) -> str:
    return f"Scheduled {render_line(view)}."


def render_listing(views: list[ScheduleView]) -> str:
    if not views:
        return "No schedules in this server. Add one with /schedule add."
    return "\n".join(["Schedules in this server:", *(f"- {render_line(view)}" for view in views)])
