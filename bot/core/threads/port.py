"""Thread bindings in the core's terms: the port through which it creates and posts into threads (implemented
by the Discord adapter), and the texts people see when a binding starts and ends."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from bot.config import AUTO_ARCHIVE_MINUTES
from bot.durations import format_duration

THREAD_NAME_CHARS = 100


class ThreadUnavailable(Exception):
    """The thread could not be created or bound; the message says why (e.g. which permission is missing)."""


@dataclass(frozen=True)
class ThreadRef:
    thread_id: int
    parent_channel_id: int | None


class ThreadPort(Protocol):
    async def create_thread(self, channel_id: int, name: str, auto_archive_minutes: int) -> ThreadRef:
        """A new thread in ``channel_id``.

        When ``channel_id`` is itself a thread, the new one goes in its parent channel."""
        ...

    async def post(self, thread_id: int, text: str) -> None: ...

    async def archive(self, thread_id: int) -> None: ...

    async def closed_among(self, guild_id: int, channel_ids: Collection[int]) -> dict[int, bool | None]:
        """For each bound thread or channel of a server, whether people closed it.

        Closed means deleted, locked, or archived by people (Discord's own archiving of an idle thread does not count:
        the next message reopens it); ``None`` if that cannot be told. Asked per server, so the port can answer most
        from one request."""
        ...


def auto_archive_minutes(idle_seconds: float, floor: int) -> int:
    """Discord's auto-archive for a bound thread: the smallest allowed duration that is at least the binding's
    idle timeout (no idle timeout: the longest), never below the configured ``floor``."""
    wanted = max(floor, idle_seconds / 60) if idle_seconds > 0 else AUTO_ARCHIVE_MINUTES[-1]
    return next((minutes for minutes in AUTO_ARCHIVE_MINUTES if minutes >= wanted), AUTO_ARCHIVE_MINUTES[-1])


def thread_name(label: str) -> str:
    return f"🤖 {label}"[:THREAD_NAME_CHARS]


def intro_text(label: str, idle_seconds: float, max_age_seconds: float) -> str:
    rules = []
    if idle_seconds > 0:
        rules.append(f"idle auto-unfocus after {format_duration(idle_seconds)} inactivity")
    if max_age_seconds > 0:
        rules.append(f"max age {format_duration(max_age_seconds)}")
    lifetime = f" ({'; '.join(rules)})" if rules else ""
    return f"⚙️ {label} session active{lifetime}. Messages here go directly to this session."


def farewell_text(reason: str, seconds: float) -> str:
    if reason == "idle":
        return (
            f"⚙️ Session ended automatically after {format_duration(seconds)} of inactivity. "
            "Messages here will no longer be routed."
        )
    if reason == "max-age":
        return (
            f"⚙️ Session ended automatically at max age of {format_duration(seconds)}. "
            "Messages here will no longer be routed."
        )
    return "⚙️ Session ended. Messages here will no longer be routed."
