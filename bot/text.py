"""What counts as visible text, and how what people typed is quoted back.

Text is *empty* when it has no visible character, so a task, steer or message made only of zero-width or
blank-looking characters is refused like an empty one instead of starting a run. A character is not visible
when it is

- a control, format or separator character (Unicode categories ``Cc``, ``Cf``, ``Zs``, ``Zl``, ``Zp``:
  zero-width space and joiners, word joiner, BOM, bidi marks, no-break and ideographic spaces, tags);
- a combining mark (``Mn``, ``Mc``, ``Me``: variation selectors, the combining grapheme joiner, accents), which
  belongs to a base character: marks alone, with no base, are not text;
- a letter or symbol that renders as blank and is used as one: the Hangul fillers (U+115F, U+1160, U+3164,
  U+FFA0) and the Braille blank (U+2800);
- a default-ignorable code point not assigned in this Python's Unicode (U+2065, U+FFF0–U+FFF8,
  U+E0000–U+E0FFF), which renders as nothing once assigned. Other unassigned code points count as visible:
  they may be emoji newer than this Python's Unicode.

Error messages quote what people typed through :func:`quoted`, so a 6,000-character agent id or target never
makes a reply longer than Discord accepts. A leaf, shared by the agent runtime and the core; the length limit and
its worded refusals are the core's (``bot/core/limits.py``).
"""

from __future__ import annotations

import unicodedata

QUOTE_CHARS = 80
ELLIPSIS = "…"

_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Mc", "Me"})
_BLANK_GLYPHS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_IGNORABLE_UNASSIGNED = ((0x2065, 0x2065), (0xFFF0, 0xFFF8), (0xE0000, 0xE0FFF))


def is_visible(char: str) -> bool:
    if char in _BLANK_GLYPHS or unicodedata.category(char) in _INVISIBLE_CATEGORIES:
        return False
    code = ord(char)
    return not any(low <= code <= high for low, high in _IGNORABLE_UNASSIGNED)


def has_visible_text(text: str) -> bool:
    return any(is_visible(char) for char in text)


def shortened(text: str, limit: int) -> str:
    """At most ``limit`` characters: cut with ``…`` when longer."""
    return text if len(text) <= limit else text[: limit - len(ELLIPSIS)] + ELLIPSIS


def quoted(text: str, limit: int = QUOTE_CHARS) -> str:
    """What someone typed, as an error message repeats it: on one line, at most ``limit`` characters."""
    return shortened(" ".join(text.split()), limit)
