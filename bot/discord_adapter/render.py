"""Render a core :class:`Announcement` into the Discord messages that carry it.

Rendering is deterministic, so a delivery resumed after a crash cuts the text into the same parts and can
continue from the first part not yet sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.core.runs.announcements import Announcement
from bot.core.runs.internal_context import strip_internal_context
from bot.discord_adapter.code_files import note_for, take_out_long_blocks
from bot.discord_adapter.splitting import split_message
from bot.records import short_run_id

ATTACH_OVER_CHARS = 6000
PREVIEW_CHARS = 1200
MAX_ATTACHMENTS = 10  # Discord's, per message

File = tuple[str, bytes]


@dataclass(frozen=True)
class OutgoingMessage:
    content: str
    attachments: tuple[File, ...] = ()


def _header(announcement: Announcement) -> str:
    mention = f"<@{announcement.mention_user_id}> " if announcement.mention_user_id else ""
    icon = announcement.status.icon
    speaker = "Scheduled job" if announcement.source == "schedule" else "Subagent"
    return (
        f"{mention}{icon} {speaker} **{announcement.agent_label}** (run `{short_run_id(announcement.run_id)}`): "
        f"{announcement.status_line}"
    )


def render(announcement: Announcement, files: Mapping[str, bytes] | None = None) -> list[OutgoingMessage]:
    """The messages to post. This is the outbound choke point: internal runtime context never gets past it.

    A completion has a header (and a stats footer); a reply is its text alone (a voice turn's mentions whom it
    tells, since it answers no message of theirs). A code block longer than one message is taken out as a file
    named after its language, attached to the message where it stood. Either body, when still longer than
    ``ATTACH_OVER_CHARS``, is posted as one message with a preview and the whole text attached as ``result.md``;
    otherwise it is split into messages, so nothing takes more than a few messages. The files the agent attached
    (``files``: their bytes by name, read from the store) go with the last message, ten at most per message."""
    body = strip_internal_context(announcement.body) or "(no output)"
    reply = announcement.kind == "reply"
    if announcement.source == "voice" and announcement.mention_user_id:  # it answers no message: it mentions
        body = f"<@{announcement.mention_user_id}> {body}"
    header = "" if reply else _header(announcement)
    footer = f"-# {announcement.stats_line}" if announcement.stats_line else ""
    shorter, snippets = take_out_long_blocks(body)
    if len(shorter) > ATTACH_OVER_CHARS:
        preview = split_message(body, PREVIEW_CHARS)[0]
        note = f"*(full {'reply' if reply else 'result'} attached as result.md, {len(body):,} characters)*"
        content = "\n".join(filter(None, [header, preview, note, footer]))
        messages = [OutgoingMessage(content, (("result.md", body.encode("utf-8")),))]
    else:
        text = "\n".join(filter(None, [header, shorter, footer]))
        messages = [
            OutgoingMessage(part, tuple(snippet for snippet in snippets if note_for(snippet[0]) in part))
            for part in split_message(text)
        ]
    return _with_files(
        messages, [(f.name, (files or {})[f.name]) for f in announcement.files if f.name in (files or {})]
    )


def _with_files(messages: list[OutgoingMessage], files: list[File]) -> list[OutgoingMessage]:
    """The agent's files on the last message; what does not fit there in messages of their own after it."""
    last = messages[-1]
    room = MAX_ATTACHMENTS - len(last.attachments)
    messages[-1] = OutgoingMessage(last.content, last.attachments + tuple(files[:room]))
    rest = files[room:]
    batches = [rest[start : start + MAX_ATTACHMENTS] for start in range(0, len(rest), MAX_ATTACHMENTS)]
    for number, batch in enumerate(batches, start=1):
        messages.append(OutgoingMessage(f"-# 📎 more files ({number}/{len(batches)})", tuple(batch)))
    return messages
