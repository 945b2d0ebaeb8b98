"""Where a run's announcement stands, in words for ``/subagents info``: pending, delivered, or failed and why —
and whether the requester was told, and where."""

from __future__ import annotations

from storage.outbox import OutboxRow

_TOLD = {"parent_channel": "in <#{channel}>", "dm": "by DM"}


def delivery_state(rows: list[OutboxRow]) -> str:
    """``rows``: the run's outbox rows, oldest first — its announcement, then any notices about it."""
    announcement = next(row for row in rows if row.notice is None)
    if announcement.status == "delivered":
        return "delivered"
    if announcement.status == "pending":
        retrying = f", last error: {announcement.last_error}" if announcement.last_error else ""
        return f"pending (attempts: {announcement.attempts}{retrying})"
    failed = f"failed after {announcement.attempts} attempt(s): {announcement.last_error}"
    notices = [row for row in rows if row.notice is not None]
    latest = notices[-1] if notices else None
    if latest is None or latest.status == "failed":
        return f"{failed}. The requester could not be told (see the bot's error log)."
    assert latest.notice is not None  # a notice row, by the filter above
    where = _TOLD[latest.notice].format(channel=latest.channel_id)
    if latest.status == "pending":
        return f"{failed}. Telling the requester {where}…"
    return f"{failed}. The requester was told {where}."
