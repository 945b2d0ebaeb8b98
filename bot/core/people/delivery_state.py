"""Where a run's announcement stands, in words for ``/subagents info``: pending, delivered, or failed and why —
and whether the requester was told, and where. Words not yet in a language: the reader's is the adapter's to know."""

from __future__ import annotations

import json

from bot.i18n import Words
from storage.outbox import OutboxRow


def delivery_state(rows: list[OutboxRow]) -> Words:
    """``rows``: the run's outbox rows, oldest first — its announcement, then any notices about it."""
    announcement = next(row for row in rows if row.notice is None)
    error = _error(announcement)
    if announcement.status == "delivered":
        return Words("delivery-delivered")
    if announcement.status == "pending":
        if announcement.last_error:
            return Words("delivery-retrying", {"attempts": announcement.attempts, "error": error})
        return Words("delivery-pending", {"attempts": announcement.attempts})
    failed = {"attempts": announcement.attempts, "error": error}
    notices = [row for row in rows if row.notice is not None]
    latest = notices[-1] if notices else None
    if latest is None or latest.status == "failed":
        return Words("delivery-failed-untold", failed)
    channel = {**failed, "channel": f"<#{latest.channel_id}>"}
    if latest.status == "pending":
        if latest.notice == "dm":
            return Words("delivery-failed-telling-dm", failed)
        return Words("delivery-failed-telling-channel", channel)
    if latest.notice == "dm":
        return Words("delivery-failed-told-dm", failed)
    return Words("delivery-failed-told-channel", channel)


def _error(row: OutboxRow) -> Words | str:
    """Why the row's last attempt failed: words in the reader's language when kept so, else as recorded."""
    if row.last_error_words:
        return Words.from_data(json.loads(row.last_error_words))
    return row.last_error or ""
