"""How ``/memory list`` shows what the bot remembers: one line a memory, newest first, with who and when.

The words are the asking member's language; what was remembered is shown as it was written."""

from __future__ import annotations

from bot.core.memory.memory_control import MemoryListing
from bot.i18n import localized
from bot.records import Memory

SNIPPET_CHARS = 80


def _snippet(text: str) -> str:
    flat = " ".join(text.split()).replace("`", "'")
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"


def render_memory(memory: Memory, locale: object = None) -> str:
    when = f"<t:{int(memory.created_at)}:R>"
    if memory.created_by_user_id is not None:
        source = localized("memory-from-member", locale, member=f"<@{memory.created_by_user_id}>", when=when)
    else:
        source = localized("memory-from-schedule", locale, when=when)
    return f"#{memory.id} · {memory.agent_id} · `{_snippet(memory.key)}`: {_snippet(memory.content)} — {source}"


def render_memories(listing: MemoryListing, locale: object = None) -> str:
    if not listing.memories:
        if listing.everyone:
            return localized("memories-none-everyone", locale)
        return localized("memories-none-yours", locale)
    if listing.everyone:
        title = localized("memories-everyone", locale, total=listing.total)
    else:
        title = localized("memories-yours", locale, total=listing.total)
    lines = [title, *(render_memory(m, locale) for m in listing.memories)]
    if listing.total > len(listing.memories):
        lines.append(localized("memories-older", locale, count=listing.total - len(listing.memories)))
    lines.append(localized("memories-forget-hint", locale))
    return "\n".join(lines)
