"""What the core answers a member, in their language: its words rendered, anything else (a model's reply) as is."""

from __future__ import annotations

from bot.i18n import Words


def spoken(text: Words | str, locale: object) -> str:
    """``text`` for a member whose Discord client speaks ``locale``."""
    return text.render(locale) if isinstance(text, Words) else text
