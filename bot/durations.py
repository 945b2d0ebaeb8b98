"""Durations people type: ``90m``, ``2h``, ``1d``, a bare number (hours), or ``off``; at most 365 days, so every
deadline built from one stays a date the scheduler and the calendar can represent."""

from __future__ import annotations

import re

OFF_WORDS = frozenset({"off", "0", "disable", "disabled", "none"})
MAX_LIFETIME_HOURS = 365 * 24  # the longest idle or max-age lifetime of a thread binding
MAX_DURATION_SECONDS = MAX_LIFETIME_HOURS * 3600
LONGEST = f"{MAX_LIFETIME_HOURS // 24}d"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd]?)$")


class DurationTooLong(ValueError):
    """A well-formed duration longer than :data:`MAX_DURATION_SECONDS`."""


def parse_duration(text: str) -> float:
    """Seconds; 0 means off. Raises :class:`DurationTooLong` past the longest, ``ValueError`` for anything else."""
    value = text.strip().lower()
    if value in OFF_WORDS:
        return 0.0
    match = _DURATION.match(value)
    if not match:
        raise ValueError(text)
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "h"]
    if seconds > MAX_DURATION_SECONDS:
        raise DurationTooLong(text)
    if seconds <= 0:
        return 0.0
    return seconds


def format_duration(seconds: float) -> str:
    if seconds <= 0:
        return "disabled"
    if seconds < 60:
        return "<1m"
    if seconds < 3600:
        return f"{seconds / 60:g}m"
    return f"{seconds / 3600:g}h"
