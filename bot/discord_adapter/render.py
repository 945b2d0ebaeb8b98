"""Render a core :class:`Announcement` into the Discord messages that carry it.

Rendering is deterministic, so a delivery resumed after a crash cuts the text into the same parts and can
continue from the first part not yet sent. The bot's own words (header, stats, notes) are in the server's language,
which the caller passes; the agent's text is never translated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.core.runs.announcements import Announcement
from bot.core.runs.internal_context import strip_internal_context
from bot.discord_adapter.code_files import note_for, take_out_long_blocks
from bot.discord_adapter.run_words import outcome_line, stats_line
from bot.discord_adapter.splitting import split_message
from bot.i18n import Words, localized
from bot.records import short_run_id

ATTACH_OVER_CHARS = 6000
PREVIEW_CHARS = 1200
MAX_ATTACHMENTS = 10  # Discord's, per message

File = tuple[str, bytes]


@dataclass(frozen=True)
class OutgoingMessage:
    content: str
    attachments: tuple[File, ...] = ()


def _header(announcement: Announcement, locale: object) -> str:
    """``Subagent **label** (run `abc`): completed successfully``; an announcement queued before its outcome was kept
    as data says its status line as it was written."""
    mention = f"<@{announcement.mention_user_id}> " if announcement.mention_user_id else ""
    outcome = announcement.outcome if announcement.status.is_terminal else None  # a draft says its own line
    status = announcement.status_line if outcome is None else outcome_line(announcement.status, outcome.error, locale)
    words = {"icon": announcement.status.icon, "label": announcement.agent_label, "status": status}
    run = short_run_id(announcement.run_id)
    if announcement.source == "schedule":
        return mention + localized("announcement-header-schedule", locale, run=run, **words)
    return mention + localized("announcement-header-subagent", locale, run=run, **words)


def _footer(announcement: Announcement, locale: object) -> str:
    if announcement.outcome is not None and announcement.kind == "completion":
        return f"-# {stats_line(announcement.outcome, locale)}"
    return f"-# {announcement.stats_line}" if announcement.stats_line else ""


def _body(announcement: Announcement, locale: object) -> str:
    """The text to post: the agent's, or for a reply that could not finish, why and what it had so far."""
    if announcement.words is not None:
        return Words.from_data(announcement.words).render(locale)
    outcome = announcement.outcome
    if announcement.apology is None or outcome is None:
        return announcement.body
    partial = announcement.partial
    so_far = f"{localized('reply-so-far', locale)}\n\n{partial}" if partial else None
    if announcement.apology == "restarted":
        return f"{localized('reply-restarted', locale)} {so_far or localized('reply-ask-again', locale)}"
    why = localized("reply-failed", locale, why=outcome_line(announcement.status, outcome.error, locale))
    return " ".join(filter(None, [why, so_far]))


def render(
    announcement: Announcement, files: Mapping[str, bytes] | None = None, locale: object = None
) -> list[OutgoingMessage]:
    """The messages to post. This is the outbound choke point: internal runtime context never gets past it.

    A completion has a header (and a stats footer); a reply is its text alone (a voice turn's mentions whom it
    tells, since it answers no message of theirs). A code block longer than one message is taken out as a file
    named after its language, attached to the message where it stood. Either body, when still longer than
    ``ATTACH_OVER_CHARS``, is posted as one message with a preview and the whole text attached as ``result.md``;
    otherwise it is split into messages, so nothing takes more than a few messages. The files the agent attached
    (``files``: their bytes by name, read from the store) go with the last message, ten at most per message.
    ``locale``: the server's preferred one (None: English)."""
    body = strip_internal_context(_body(announcement, locale)) or localized("announcement-no-output", locale)
    reply = announcement.kind == "reply"
    if announcement.source == "voice" and announcement.mention_user_id:  # it answers no message: it mentions
        body = f"<@{announcement.mention_user_id}> {body}"
    header = "" if reply else _header(announcement, locale)
    footer = _footer(announcement, locale)
    shorter, snippets = take_out_long_blocks(body, locale=locale)
    if len(shorter) > ATTACH_OVER_CHARS:
        preview = split_message(body, PREVIEW_CHARS)[0]
        if reply:
            note = localized("announcement-reply-attached", locale, characters=len(body))
        else:
            note = localized("announcement-result-attached", locale, characters=len(body))
        content = "\n".join(filter(None, [header, preview, note, footer]))
        messages = [OutgoingMessage(content, (("result.md", body.encode("utf-8")),))]
    else:
        text = "\n".join(filter(None, [header, shorter, footer]))
        messages = [
            OutgoingMessage(part, tuple(snippet for snippet in snippets if note_for(snippet[0]) in part))
            for part in split_message(text)
        ]
    return _with_files(
        messages, [(f.name, (files or {})[f.name]) for f in announcement.files if f.name in (files or {})], locale
    )


def _with_files(messages: list[OutgoingMessage], files: list[File], locale: object) -> list[OutgoingMessage]:
    """The agent's files on the last message; what does not fit there in messages of their own after it."""
    last = messages[-1]
    room = MAX_ATTACHMENTS - len(last.attachments)
    messages[-1] = OutgoingMessage(last.content, last.attachments + tuple(files[:room]))
    rest = files[room:]
    batches = [rest[start : start + MAX_ATTACHMENTS] for start in range(0, len(rest), MAX_ATTACHMENTS)]
    for number, batch in enumerate(batches, start=1):
        more = localized("announcement-more-files", locale, number=number, count=len(batches))
        messages.append(OutgoingMessage(f"-# {more}", tuple(batch)))
    return messages
