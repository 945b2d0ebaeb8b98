"""How ``/memory list`` shows what the bot remembers: one line a memory, newest first, with who and when."""

from __future__ import annotations

from bot.core.memory.memory_control import MemoryListing
from bot.records import Memory

SNIPPET_CHARS = 80


def _snippet(text: str) -> str:
    flat = " ".join(text.split()).replace("`", "'")
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"


def render_memory(memory: Memory) -> str:
    who = f"<@{memory.created_by_user_id}>" if memory.created_by_user_id is not None else "a schedule"
    return (
        f"#{memory.id} · {memory.agent_id} · `{_snippet(memory.key)}`: {_snippet(memory.content)} "
        f"— from {who}'s conversation, <t:{int(memory.created_at)}:R>"
    )


def render_memories(listing: MemoryListing) -> str:
    whose = "this server's conversations" if listing.everyone else "your conversations in this server"
    if not listing.memories:
        return f"Nothing is remembered from {whose}."
    lines = [f"Remembered from {whose} ({listing.total}):", *(render_memory(m) for m in listing.memories)]
    if listing.total > len(listing.memories):
        lines.append(f"…and {listing.total - len(listing.memories)} older; forget some to see them.")
    lines.append("Forget one with /memory forget id:<number>.")
    return "\n".join(lines)
