"""The one limit on text people and agents send, and its one checker.

The text is tasks, messages and steers.

What counts as visible is :mod:`bot.text`'s rule. Refusals keep the wording each path has always used: a task
or a chat message is "too long (N characters; the limit is L)", a message into a run "too long (N chars, max L)".
"""

from __future__ import annotations

from bot.core.errors import TextRefused
from bot.i18n import Words
from bot.text import has_visible_text

MAX_TEXT_CHARS = 4000
MAX_LABEL_CHARS = 100


class EmptyText(TextRefused):
    """The text has no visible character."""


class TextTooLong(TextRefused):
    def __init__(self, message: Words, length: int, limit: int) -> None:
        super().__init__(message)
        self.length = length
        self.limit = limit


def checked_text(
    text: str, *, what: str = "Message", empty: Words | None = None, terse: bool = False, limit: int = MAX_TEXT_CHARS
) -> str:
    """``text`` without surrounding whitespace; :class:`EmptyText` when nothing in it is visible (worded ``empty``,
    by default "<what> must not be empty."), :class:`TextTooLong` when it is longer than ``limit``."""
    stripped = text.strip()
    if not has_visible_text(stripped):
        raise EmptyText(empty or Words("refused-text-empty", {"what": what}))
    length = len(stripped)
    if length > limit:
        worded = (
            Words("refused-text-too-long-terse", {"what": what, "length": str(length), "limit": str(limit)})
            if terse
            else Words("refused-text-too-long", {"what": what, "length": f"{length:,}", "limit": f"{limit:,}"})
        )
        raise TextTooLong(worded, length, limit)
    return stripped
