"""Split long text into Discord-sized messages on line boundaries, keeping code fences balanced.

It is in the spirit of Red's ``pagify``: a fence open at a cut is closed there and reopened in the next part."""

from __future__ import annotations

DISCORD_MESSAGE_LIMIT = 2000
FENCE = "```"
_CLOSE = "\n" + FENCE
_MAX_OPENER = 24


def _toggles_fence(line: str) -> bool:
    return line.lstrip().count(FENCE) % 2 == 1


def _opener(line: str) -> str:
    stripped = line.strip()
    return stripped[:_MAX_OPENER] if stripped.startswith(FENCE) else FENCE


def _explode(text: str, width: int) -> list[str]:
    """Lines of ``text``, any longer than ``width`` cut at its last space before it."""
    lines: list[str] = []
    for line in text.split("\n"):
        while len(line) > width:
            cut = line.rfind(" ", width // 2, width)
            cut = cut if cut > 0 else width
            lines.append(line[:cut])
            line = line[cut:].lstrip(" ") if cut < width else line[cut:]
        lines.append(line)
    return lines


def split_message(text: str, limit: int = DISCORD_MESSAGE_LIMIT) -> list[str]:
    """Parts of at most ``limit`` characters; every part has balanced code fences."""
    reserve = len(_CLOSE) + _MAX_OPENER + 1
    parts: list[str] = []
    current: list[str] = []
    size = 0
    open_fence: str | None = None
    for line in _explode(text, limit - 2 * reserve):
        after = (None if open_fence else _opener(line)) if _toggles_fence(line) else open_fence
        projected = size + (1 if current else 0) + len(line) + (len(_CLOSE) if after else 0)
        if current and projected > limit:
            parts.append("\n".join(current) + (_CLOSE if open_fence else ""))
            current = [open_fence] if open_fence else []
            size = len(open_fence) if open_fence else 0
        size += (1 if current else 0) + len(line)
        current.append(line)
        open_fence = after
    if current:
        parts.append("\n".join(current) + (_CLOSE if open_fence else ""))
    return [part for part in parts if part.strip()] or [text[:limit]]
