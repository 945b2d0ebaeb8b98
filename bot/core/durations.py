"""Durations people type: ``90m``, ``2h``, ``1d``, a bare number (hours), or ``off``."""

from __future__ import annotations

import re

OFF_WORDS = frozenset({"off", "0", "disable", "disabled", "none"})
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd]?)$")


def parse_duration(text: str) -> float:
    """Seconds; 0 means off. Raises ``ValueError`` for anything else."""
    value = text.strip().lower()
    if value in OFF_WORDS:
        return 0.0
    match = _DURATION.match(value)
    if not match:
        raise ValueError(text)
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "h"]
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
