"""The catalogues: every language complete, every message code names present, no message left unused.

Code names a message by a literal id as an argument of a lookup (``LOOKUPS``: the call's name and which argument is
the id), so this test can find every one without running anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fluent.syntax import FluentParser, visitor
from fluent.syntax import ast as fluent

from bot.discord_adapter.command_translator import CHOICE_PREFIX, COMMAND_PREFIX
from bot.i18n import ENGLISH, LANGUAGES, LOCALES, Words, language_of, localized

ROOT = Path(__file__).resolve().parent.parent
CODE = ("bot", "cogs")
# A call's name → the position of its message id among the positional arguments.
LOOKUPS = {"localized": 0, "Words": 0}
# Messages code names by building their ids (e.g. a command's description from its name); never reported unused.
BUILT_PREFIXES: tuple[str, ...] = (COMMAND_PREFIX, CHOICE_PREFIX)  # tests/test_command_translations.py checks them
DEFINES = {"bot/i18n.py"}  # where the lookups are defined, not used


class _Variables(visitor.Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_VariableReference(self, node: fluent.VariableReference) -> None:
        self.names.add(node.id.name)


def _catalogue(language: str) -> dict[str, set[str]]:
    """A language's message ids, each with the variables it uses."""
    found: dict[str, set[str]] = {}
    for path in sorted((LOCALES / language).glob("*.ftl")):
        resource = FluentParser().parse(path.read_text(encoding="utf-8"))
        junk = [entry for entry in resource.body if isinstance(entry, fluent.Junk)]
        assert not junk, f"{path.relative_to(ROOT)} does not parse: {junk[0].content[:80]!r}"
        for entry in resource.body:
            if isinstance(entry, fluent.Message):
                assert entry.id.name not in found, f"{entry.id.name} is twice in {language}"
                variables = _Variables()
                variables.visit(entry)
                found[entry.id.name] = variables.names
    return found


def _call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _used() -> dict[str, str]:
    """Every message id code names, with where; a lookup whose id is not a literal is a failure of its own."""
    used: dict[str, str] = {}
    dynamic: list[str] = []
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if str(path.relative_to(ROOT)) in DEFINES:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call) or (name := _call_name(node)) not in LOOKUPS:
                    continue
                position = LOOKUPS[name]
                if len(node.args) <= position:
                    continue
                key = node.args[position]
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    used.setdefault(key.value, where)
                elif not isinstance(key, ast.Starred):
                    dynamic.append(where)
    assert not dynamic, f"message ids must be literals (or a BUILT_PREFIXES id): {dynamic}"
    return used


def test_every_language_has_every_english_message_with_the_same_variables():
    english = _catalogue(ENGLISH)
    assert english
    for language in LANGUAGES:
        other = _catalogue(language)
        assert sorted(set(english) - set(other)) == [], f"{language} lacks these"
        assert sorted(set(other) - set(english)) == [], f"{language} has messages English lacks"
        differing = {key: (english[key], other[key]) for key in english if english[key] != other[key]}
        assert differing == {}, f"{language} uses other variables than English"


def test_every_message_code_names_is_in_the_catalogue():
    english = _catalogue(ENGLISH)
    missing = {key: where for key, where in _used().items() if key not in english}
    assert missing == {}


def test_no_message_is_left_unused():
    used = _used()
    unused = [key for key in _catalogue(ENGLISH) if key not in used and not key.startswith(BUILT_PREFIXES)]
    assert unused == []


@pytest.mark.parametrize(
    ("locale", "language"),
    [("es-ES", "es"), ("es-419", "es"), ("en-US", "en"), ("en-GB", "en"), ("fr", "en"), (None, "en"), ("", "en")],
)
def test_a_discord_locale_picks_its_language(locale, language):
    assert language_of(locale) == language


def test_words_render_in_a_language_and_are_english_as_a_string():
    words = Words("refusal", {"reason": "no"})
    assert str(words) == "⚠️ no"
    assert words.render("es-ES") == localized("refusal", "es-ES", reason="no")
    with pytest.raises(KeyError):
        localized("no-such-message")
