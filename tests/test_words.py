"""The project's words: short docstring openings, no history in the text, the lineage said once.

A docstring's first sentence says what a thing is or does, in under 15 words; the why follows it. Issue and part
numbers belong in commit messages, and nothing points at files outside the repository. The projects whose profiles
the config follows are named in one module, the one that maps their profile names.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Folders and files held to these words, relative to the repository's root (a folder counts with everything in it).
WORDED = (
    "bot/agents",
    "bot/core",
    "bot/discord_adapter",
    "cogs",
    "storage",
    "bench",
    *(f"bot/{module.name}" for module in sorted((ROOT / "bot").glob("*.py"))),
)

MAX_OPENING_WORDS = 14  # "under 15 words"
SENTENCE_END = re.compile(r"(?<=[.;:!?])\s")
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

HISTORY = re.compile(r"(?i:\bissue [0-9])|\bPart [0-9]|reference/|\.\./shared/")

LINEAGE = re.compile(r"ZeroClaw|OpenClaw", re.IGNORECASE)
LINEAGE_HOME = "bot/profiles.py"  # maps their profile names: the lineage is said there
LINEAGE_ALLOWED = {
    # A migration's comment ("ZeroClaw's shared tracker"), left as shipped: no model reads it, and rewording it
    # changes no behaviour; the entry goes when it is reworded.
    "storage/migrations/sqlite/0007_delegate_tasks.sql",
    # The ``delegate`` tool's refusal of an independent target that asks for approvals: the model reads it verbatim,
    # and it sends the model to "ZeroClaw docs".
    "bot/core/tools/delegate_reach.py",
    # Code names, not words: the ``Cap.zeroclaw`` flag and ``zeroclaw_refusal`` (which a runtime profile's cost cap
    # uses); both entries go when a code change renames them.
    "bot/core/budgets/caps.py",
    "bot/core/budgets/meter.py",
}


def _files(suffix: str | None = None) -> Iterator[Path]:
    for entry in WORDED:
        path = ROOT / entry
        found = sorted(path.rglob("*")) if path.is_dir() else [path]
        for file in found:
            if file.is_file() and "__pycache__" not in file.parts and (suffix is None or file.suffix == suffix):
                yield file


def _text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


def _name(file: Path) -> str:
    return file.relative_to(ROOT).as_posix()


def opening(docstring: str) -> str:
    """A docstring's first sentence: its first paragraph up to the first sentence end."""
    paragraph = docstring.strip().split("\n\n")[0].replace("\n", " ")
    return SENTENCE_END.split(paragraph, maxsplit=1)[0]


def test_the_words_cover_their_folders() -> None:
    names = {_name(file) for file in _files(".py")}
    assert "bot/profiles.py" in names and "storage/db.py" in names and "bench/targets.py" in names


def test_a_docstring_opens_with_what_in_under_15_words() -> None:
    long = []
    for file in _files(".py"):
        tree = ast.parse(_text(file))
        nodes = [tree, *(node for node in ast.walk(tree) if isinstance(node, DEFINITIONS))]
        for node in nodes:
            docstring = ast.get_docstring(node)
            if docstring and len(opening(docstring).split()) > MAX_OPENING_WORDS:
                line = getattr(node, "lineno", 1)
                long.append(f"{_name(file)}:{line} {getattr(node, 'name', '<module>')}: {opening(docstring)[:80]}")
    assert not long, "first sentences of 15 words or more:\n" + "\n".join(long)


def test_no_issue_numbers_part_numbers_or_outside_files() -> None:
    found = [
        f"{_name(file)}:{number}: {line.strip()[:100]}"
        for file in _files()
        for number, line in enumerate(_text(file).splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert not found, "history or pointers outside the repository:\n" + "\n".join(found)


def test_the_lineage_is_said_once() -> None:
    found = [
        f"{_name(file)}:{number}: {line.strip()[:100]}"
        for file in _files()
        if _name(file) != LINEAGE_HOME and _name(file) not in LINEAGE_ALLOWED
        for number, line in enumerate(_text(file).splitlines(), 1)
        if LINEAGE.search(line)
    ]
    assert not found, f"ZeroClaw / OpenClaw named outside {LINEAGE_HOME}:\n" + "\n".join(found)
    home = ast.get_docstring(ast.parse(_text(ROOT / LINEAGE_HOME))) or ""
    assert LINEAGE.search(home), f"{LINEAGE_HOME}'s docstring says where the profiles come from"
