"""What the core asks of a chat adapter showing answers while they are written."""

from __future__ import annotations

from typing import Protocol

from bot.core.runs.announcements import Announcement


class DraftPort(Protocol):
    """Shows a run's answer so far where its result goes; then lets go.

    ``write`` never blocks (the adapter coalesces and paces the edits); ``close`` returns once nothing more of the
    draft can reach the chat, so the final text, posted over the draft after it, is never overwritten."""

    def write(self, channel_id: int, draft: Announcement, text: str) -> None: ...

    async def close(self, run_id: str) -> None: ...

    async def abandon(self, run_id: str, *, stopped: bool) -> None: ...
