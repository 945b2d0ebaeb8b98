"""The bot's words for people, in their language: one Fluent catalogue per language.

Every sentence a member, an admin or an operator reads is a message of ``bot/locales/<language>/*.ftl``, looked up
by its id. Fluent keeps plurals and word order in the catalogue, where a translator can fix them, instead of in
code. English is complete and is what a missing translation falls back to; ``tests/test_i18n.py`` fails when code
names a message some catalogue lacks. What the model reads (tool results, refusals it adapts to) is not here: it
stays English, a contract with the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from fluent.runtime import FluentBundle, FluentResource

LOCALES = Path(__file__).resolve().parent / "locales"
ENGLISH = "en"
LANGUAGES = ("en", "es")  # each a folder of LOCALES, complete


def language_of(locale: object) -> str:
    """The catalogue's language for a Discord locale (``es-ES``, ``es-419`` → ``es``); English when none fits.

    Takes a ``discord.Locale`` or its string, or None (a DM, a server that said nothing)."""
    value = getattr(locale, "value", locale)
    if not isinstance(value, str):
        return ENGLISH
    language = value.split("-", 1)[0].lower()
    return language if language in LANGUAGES else ENGLISH


@cache
def bundle(language: str) -> FluentBundle:
    """One language's messages, every ``.ftl`` file of its folder, read once."""
    found = FluentBundle([language], use_isolating=False)
    for path in sorted((LOCALES / language).glob("*.ftl")):
        found.add_resource(FluentResource(path.read_text(encoding="utf-8")))
    return found


def localized(key: str, locale: object = None, /, **args: Any) -> str:
    """Message ``key`` in ``locale``'s language with ``args`` put in; English where the language lacks it.

    A key no catalogue has is a programming error (the catalogue test catches it first)."""
    for language in dict.fromkeys((language_of(locale), ENGLISH)):
        found = bundle(language)
        if found.has_message(key):
            message = found.get_message(key)
            if message.value is None:
                raise KeyError(f"message {key!r} has no value in {language!r}")
            words, errors = found.format_pattern(message.value, args)
            if errors:
                raise ValueError(f"message {key!r} in {language!r}: {errors[0]}")
            return str(words)
    raise KeyError(f"no catalogue has message {key!r}")


@dataclass(frozen=True)
class Words:
    """A message not yet put in a language: its id and its arguments.

    The core says what to tell a person without knowing their language; the adapter renders it in theirs.
    ``str()`` is the English, for logs and for the model."""

    key: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def render(self, locale: object = None) -> str:
        """The message in ``locale``'s language; an argument that is itself words is put in the same language."""
        args = {name: value.render(locale) if isinstance(value, Words) else value for name, value in self.args.items()}
        return localized(self.key, locale, **args)

    def __str__(self) -> str:
        return self.render(ENGLISH)

    def as_data(self) -> dict[str, Any]:
        """The words as JSON-ready data.

        Stored with what is posted later, in a language not known yet."""
        args = {name: value.as_data() if isinstance(value, Words) else value for name, value in self.args.items()}
        return {"key": self.key, "args": args}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Words:
        """Words stored by :meth:`as_data`; an argument that is a mapping is words too."""
        args = {
            name: cls.from_data(value) if isinstance(value, Mapping) else value for name, value in data["args"].items()
        }
        return cls(data["key"], args)
