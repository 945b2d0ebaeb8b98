"""How schedules look in Discord: ``/schedule`` replies, with next firings as Discord timestamps (each reader sees
their own time zone) and in the asking member's language, and which of a server's channels a schedule may name."""

from __future__ import annotations

import discord

from bot.core.people.schedule_control import ScheduleView
from bot.i18n import localized
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


def _next(view: ScheduleView, locale: object) -> str:
    if view.next_at is None:
        return localized("schedule-no-next", locale)
    return localized("schedule-next", locale, when=f"<t:{int(view.next_at)}:R>")


def render_line(view: ScheduleView, locale: object = None) -> str:
    schedule, spec = view.schedule, view.schedule.spec
    if schedule.source is ScheduleSource.CONFIG:
        source = "config.toml"
    else:
        source = localized("schedule-added-by", locale, member=f"<@{schedule.created_by}>")
    return localized(
        "schedule-line",
        locale,
        name=spec.name,
        id=str(schedule.id),
        source=source,
        cron=spec.cron,
        timezone=spec.timezone,
        agent=spec.agent_id,
        channel=f"<#{spec.channel_id}>",
        next=_next(view, locale),
    )


def render_added(view: ScheduleView, locale: object = None) -> str:
    return localized("schedule-added", locale, schedule=render_line(view, locale))


def render_listing(views: list[ScheduleView], locale: object = None) -> str:
    if not views:
        return localized("schedules-none", locale)
    lines = [f"- {render_line(view, locale)}" for view in views]
    return "\n".join([localized("schedules-title", locale), *lines])
