"""Long code blocks taken out of a text as files named after their language.

A block (opening fence to closing fence) longer than one message would be cut mid-block; instead it becomes a
file (```` ```python ```` → ``snippet.py``, no or an unknown language → ``.txt``; the second ``snippet-2.py``) and
a note in the text names it, in the post's language. Deterministic: the same text and language give the same notes
and files.
"""

from __future__ import annotations

from bot.discord_adapter.splitting import DISCORD_MESSAGE_LIMIT, FENCE
from bot.i18n import localized

EXTENSIONS = {
    "bash": "sh",
    "c": "c",
    "c++": "cpp",
    "cpp": "cpp",
    "cs": "cs",
    "csharp": "cs",
    "css": "css",
    "csv": "csv",
    "diff": "diff",
    "go": "go",
    "html": "html",
    "java": "java",
    "javascript": "js",
    "js": "js",
    "json": "json",
    "kotlin": "kt",
    "markdown": "md",
    "md": "md",
    "php": "php",
    "py": "py",
    "python": "py",
    "rb": "rb",
    "ruby": "rb",
    "rs": "rs",
    "rust": "rs",
    "sh": "sh",
    "shell": "sh",
    "sql": "sql",
    "swift": "swift",
    "toml": "toml",
    "ts": "ts",
    "typescript": "ts",
    "xml": "xml",
    "yaml": "yaml",
    "yml": "yaml",
}
NOTE = "📎 `{name}`"


def extension_of(opener: str) -> str:
    """The file extension for a fence's opening line: its language's, else ``txt``."""
    words = opener.strip()[len(FENCE) :].split()
    return EXTENSIONS.get(words[0].lower(), "txt") if words else "txt"


def _file_name(extension: str, number: int) -> str:
    return f"snippet.{extension}" if number == 1 else f"snippet-{number}.{extension}"


def note_for(name: str) -> str:
    """The line that stands in the text where the block was: the attached file's name."""
    return NOTE.format(name=name)


def take_out_long_blocks(
    text: str, limit: int = DISCORD_MESSAGE_LIMIT, locale: object = None
) -> tuple[str, list[tuple[str, bytes]]]:
    """``text`` with each code block over ``limit`` replaced by a note; those blocks as files.

    A block still open at the end runs to the end."""
    lines = text.split("\n")
    kept: list[str] = []
    files: list[tuple[str, bytes]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.lstrip().startswith(FENCE) or line.count(FENCE) > 1:  # no fence, or a block on one line
            kept.append(line)
            index += 1
            continue
        end = next((i for i in range(index + 1, len(lines)) if lines[i].strip().startswith(FENCE)), len(lines) - 1)
        block = lines[index : end + 1]
        if len("\n".join(block)) <= limit:
            kept.extend(block)
        else:
            closed = end > index and lines[end].strip().startswith(FENCE)
            code = block[1:-1] if closed else block[1:]
            name = _file_name(extension_of(line), len(files) + 1)
            files.append((name, ("\n".join(code) + "\n").encode("utf-8")))
            kept.append(f"{note_for(name)} ({localized('code-file-lines', locale, count=len(code))})")
        index = end + 1
    return "\n".join(kept), files
