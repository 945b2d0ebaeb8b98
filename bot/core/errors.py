"""Refusals worded for the person (or agent) who asked: safe to show as they are.

A slash command shows one as an ephemeral ``⚠️`` reply in the member's language; an agent's tool returns it as
``{"status": error.status, "error": str(error)}``, so the model reads it (English, as ever) and adapts.
"""

from __future__ import annotations

from typing import Literal

from bot.core.stats import format_runtime
from bot.i18n import Words

RefusalStatus = Literal["forbidden", "error"]


class UserError(Exception):
    """A refusal whose message is written for the person who asked.

    Its ``words`` are rendered in the person's language; ``str()`` is the English, which the model and logs read.
    A plain string is a refusal no catalogue has (text from elsewhere, such as a library's error)."""

    status: RefusalStatus = "error"  # ``forbidden``: a policy said no; ``error``: the request is wrong

    def __init__(self, words: Words | str) -> None:
        super().__init__(str(words))
        self.words = words

    def render(self, locale: object = None) -> str:
        """The refusal in ``locale``'s language."""
        return self.words.render(locale) if isinstance(self.words, Words) else str(self.words)


class AttachmentRefused(UserError):
    """An attachment a run cannot take: over a limit, unreadable, or an image for a blind model.

    Nothing is started, and the refusal is for the person who attached it alone."""


class SpawnRefused(UserError):
    """A refused spawn; every refusal happens before anything is written."""

    def __init__(self, status: RefusalStatus, message: Words | str) -> None:
        super().__init__(message)
        self.status = status


class SessionArchived(UserError):
    """An archived session takes no more messages: the one rule for every way of writing to a session."""

    def __init__(self, session_key: str, archived_at: float, now: float) -> None:
        super().__init__(
            Words("refused-session-archived", {"session": session_key, "ago": format_runtime(now - archived_at)})
        )


class EphemeralSession(UserError):
    """A ``spawn_subagent`` child answers only the tool call that started it: nobody else can talk to it."""

    def __init__(self, session_key: str) -> None:
        super().__init__(Words("refused-ephemeral-session", {"session": session_key}))


class CallerEnded(UserError):
    """The caller's run ended (killed, say) while its child was being launched.

    The child is not launched."""

    def __init__(self, run_id: str) -> None:
        super().__init__(Words("refused-caller-ended", {"run": run_id}))


class UnknownTarget(UserError, LookupError):
    """A sub-agent target that names no one, or more than one.

    A target is a list index, a label, a run id prefix or a session key."""


class TextRefused(UserError):
    """Text that is empty or too long (see ``bot/core/limits.py``)."""
