"""Render a core :class:`Announcement` into the Discord messages that carry it.

Rendering is deterministic, so a delivery resumed after a crash cuts the text into the same parts and can
continue from the first part not yet sent.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.runs.announcements import Announcement
from bot.core.runs.internal_context import strip_internal_context
from bot.discord_adapter.splitting import split_message
from bot.records import short_run_id

ATTACH_OVER_CHARS = 6000
PREVIEW_CHARS = 1200


@dataclass(frozen=True)
class OutgoingMessage:
    content: str
    attachment: tuple[str, bytes] | None = None


def _header(announcement: Announcement) -> str:
    mention = f"<@{announcement.mention_user_id}> " if announcement.mention_user_id else ""
    icon = announcement.status.icon
    speaker = "Scheduled job" if announcement.source == "schedule" else "Subagent"
    return (
        f"{mention}{icon} {speaker} **{announcement.agent_label}** (run `{short_run_id(announcement.run_id)}`): "
        f"{announcement.status_line}"
    )


def render(announcement: Announcement) -> list[OutgoingMessage]:
    """The messages to post. This is the outbound choke point: internal runtime context never gets past it.

    A completion has a header (and a stats footer); a reply is its text alone (a voice turn's mentions whom it
    tells, since it answers no message of theirs). Either body, when longer than
    ``ATTACH_OVER_CHARS``, is posted as one message with a preview and the whole text attached as ``result.md``;
    otherwise it is split into messages, so nothing takes more than a few messages."""
    body = strip_internal_context(announcement.body) or "(no output)"
    reply = announcement.kind == "reply"
    if announcement.source == "voice" and announcement.mention_user_id:  # it answers no message: it mentions
        body = f"<@{announcement.mention_user_id}> {body}"
    header = "" if reply else _header(announcement)
    footer = f"-# {announcement.stats_line}" if announcement.stats_line else ""
    if len(body) > ATTACH_OVER_CHARS:
        preview = split_message(body, PREVIEW_CHARS)[0]
        note = f"*(full {'reply' if reply else 'result'} attached as result.md, {len(body):,} characters)*"
        content = "\n".join(filter(None, [header, preview, note, footer]))
        return [OutgoingMessage(content, ("result.md", body.encode("utf-8")))]
    text = "\n".join(filter(None, [header, body, footer]))
    return [OutgoingMessage(part) for part in split_message(text)]
