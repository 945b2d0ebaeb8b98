"""Refusals worded for the person (or agent) who asked: safe to show as they are.

A slash command shows one as an ephemeral ``⚠️`` reply; an agent's tool returns it as
``{"status": error.status, "error": str(error)}``, so the model reads it and adapts.
"""

from __future__ import annotations

from typing import Literal

from bot.core.stats import format_runtime

RefusalStatus = Literal["forbidden", "error"]


class UserError(Exception):
    """A refusal whose message is written for the person who asked."""

    status: RefusalStatus = "error"  # ``forbidden``: a policy said no; ``error``: the request is wrong


class AttachmentRefused(UserError):
    """An attachment a run cannot take: over a limit, unreadable, or an image for a blind model.

    Nothing is started, and the refusal is for the person who attached it alone."""


class SpawnRefused(UserError):
    """A refused spawn; every refusal happens before anything is written."""

    def __init__(self, status: RefusalStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class SessionArchived(UserError):
    """An archived session takes no more messages: the one rule for every way of writing to a session."""

    def __init__(self, session_key: str, archived_at: float, now: float) -> None:
        super().__init__(
            f"Session {session_key} was archived {format_runtime(now - archived_at)} ago and takes no more "
            "messages. Spawn a new sub-agent to go on (its transcript stays readable with /subagents log)."
        )


class EphemeralSession(UserError):
    """A ``spawn_subagent`` child answers only the tool call that started it: nobody else can talk to it."""

    def __init__(self, session_key: str) -> None:
        super().__init__(
            f"Session {session_key} is a spawn_subagent run: it answers only the agent that started it and takes "
            "no messages."
        )


class CallerEnded(UserError):
    """The caller's run ended (killed, say) while its child was being launched.

    The child is not launched."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"Run {run_id} has ended; it can start nothing more.")


class UnknownTarget(UserError, LookupError):
    """A sub-agent target that names no one, or more than one.

    A target is a list index, a label, a run id prefix or a session key."""


class TextRefused(UserError):
    """Text that is empty or too long (see ``bot/core/limits.py``)."""
