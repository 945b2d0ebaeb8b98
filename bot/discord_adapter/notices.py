"""Telling a requester that what they waited for could not be posted: where (the parent channel of a thread
that is gone, else a DM, else only the error log) and what to say (which run, why, and where to read it).

A notice is an outbox row of its own, added in the same transaction that fails the row it is about, so it is
posted exactly once like any announcement. A notice that fails in the parent channel is passed on to a DM; one
that fails in a DM is only logged. It is worded once, when written, in the language of the announcement's server
(in a DM too: it is about that server's run).
"""

from __future__ import annotations

import discord

from bot.core.runs.announcements import Announcement
from bot.discord_adapter.server_locale import server_locale
from bot.i18n import Words, localized
from bot.records import short_run_id
from storage.outbox import NewNotice, NoticeVia, OutboxRow


def notice_text(announcement: Announcement, channel_id: int, reason: Words | str, locale: object = None) -> str:
    mention = f"<@{announcement.mention_user_id}> " if announcement.mention_user_id else ""
    words = {
        "label": announcement.agent_label,
        "run": short_run_id(announcement.run_id),
        "channel": f"<#{channel_id}>",
        "reason": reason.render(locale) if isinstance(reason, Words) else reason,
    }
    if announcement.kind == "reply":
        return mention + localized("notice-answer-not-posted", locale, **words)
    return mention + localized("notice-result-not-posted", locale, **words)


class FailureNotices:
    def __init__(self, client: discord.Client) -> None:
        self._client = client

    async def for_failed(
        self, row: OutboxRow, announcement: Announcement, reason: Words | str, *, permanent: bool
    ) -> NewNotice | None:
        """The notice for ``row``, which just failed, or ``None`` when nobody can be told. Opening the DM may
        raise Discord's errors; a transient one means: decide again at the row's next attempt."""
        if row.notice is None and permanent and announcement.fallback_channel_id is not None:
            return self._notice(row, announcement, reason, "parent_channel", announcement.fallback_channel_id)
        if row.notice == "dm" or announcement.mention_user_id is None:
            return None
        dm = await self._client.create_dm(discord.Object(announcement.mention_user_id))
        if dm.id == row.channel_id:
            return None
        return self._notice(row, announcement, reason, "dm", dm.id)

    def _notice(
        self, row: OutboxRow, announcement: Announcement, reason: Words | str, via: NoticeVia, channel_id: int
    ) -> NewNotice:
        """A failed notice is passed on as it is: its text already tells what happened to the announcement."""
        if row.notice is not None:
            payload = row.payload_json
        else:
            notice = Announcement(
                kind="reply",
                status=announcement.status,
                status_line=announcement.status_line,
                body=notice_text(
                    announcement,
                    row.channel_id,
                    reason,
                    server_locale(self._client, row.channel_id, announcement.guild_id),
                ),
                agent_label=announcement.agent_label,
                run_id=announcement.run_id,
                session_key=announcement.session_key,
                mention_user_id=announcement.mention_user_id,
            )
            payload = notice.model_dump_json()
        return NewNotice(
            key=f"{row.idempotency_key}:notice:{via}", channel_id=channel_id, via=via, payload_json=payload
        )
