"""The documentation stays true to the code: every config key documented, every link resolving, the README a manual.

Keys are matched by their dotted path in backticks in docs/configuration.md (`discord.token_env`); a segment that
people name themselves (an agent's id, a provider's or MCP server's name) is written as a placeholder there
(`agents.list.<id>.model`), and an array of tables's entries as `schedules[].name`. Links are checked with their
anchors: a `#fragment` must be a heading of the file it points to, slugged as GitHub does.
"""

from __future__ import annotations

import ast
import re
import tomllib
import types
import typing
from pathlib import Path

from pydantic import BaseModel

from bot.config import Config

ROOT = Path(__file__).resolve().parent.parent
CONFIGURATION = ROOT / "docs" / "configuration.md"
README = ROOT / "README.md"
README_MAX_LINES = 450
ANY = "*"  # a segment people name themselves


def _segments(span: str) -> tuple[str, ...]:
    """A backticked key as path segments: placeholders (`<id>`, `"<provider>/<model>"`) become ANY, `[]` goes."""
    parts = re.findall(r'"[^"]*"|[^.]+', span.strip().strip("[]"))
    return tuple(ANY if part.startswith(('"', "<")) else part.removesuffix("[]") for part in parts)


def documented_paths(text: str) -> set[tuple[str, ...]]:
    """Every backticked span of a document that could be a key, as segments."""
    return {_segments(span) for span in re.findall(r"`([^`\n]+)`", text) if not span.startswith(" ")}


def _models_in(annotation: object) -> list[tuple[str, type[BaseModel]]]:
    """The models an annotation holds, each with how it is reached: "" (the field itself), "list" or "dict"."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [("", annotation)]
    if origin is typing.Annotated:
        return _models_in(args[0])
    if origin in (typing.Union, types.UnionType):
        return [found for arg in args for found in _models_in(arg)]
    if origin is list:
        return [("list", model) for _, model in _models_in(args[0])]
    if origin is dict:
        return [("dict", model) for _, model in _models_in(args[1])]
    return []


def model_paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every key a config model takes, nested sections included, as segments (a dict's keys as ANY). A field
    holding a section is its keys; a field holding a list of tables is documented itself and by its keys."""
    paths: set[tuple[str, ...]] = set()
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        nested = _models_in(field.annotation)
        if not nested or any(how == "list" for how, _ in nested):
            paths.add(path)
        for how, inner in nested:
            paths |= model_paths(inner, (*path, ANY) if how == "dict" else path)
    return paths


def example_paths(table: dict[str, object], model: type[BaseModel], prefix: tuple[str, ...] = ()) -> set[tuple]:
    """The keys config.example.toml sets, as the model reaches them (a name people choose becomes ANY)."""
    paths: set[tuple[str, ...]] = set()
    for key, value in table.items():
        assert key in model.model_fields, f"config.example.toml sets {'.'.join((*prefix, key))}, which no model has"
        path = (*prefix, key)
        nested = _models_in(model.model_fields[key].annotation)
        inner = nested[0][1] if nested else None
        how = nested[0][0] if nested else ""
        if inner is not None and how == "dict" and isinstance(value, dict):
            for entry in value.values():
                paths |= example_paths(entry, inner, (*path, ANY))
        elif inner is not None and how == "list" and isinstance(value, list):
            paths.add(path)
            for entry in value:
                paths |= example_paths(entry, inner, path)
        elif inner is not None and isinstance(value, dict):
            paths |= example_paths(value, inner, path)
        else:
            paths.add(path)
    return paths


def commented_keys(text: str) -> set[str]:
    """Keys config.example.toml shows commented out (`# model = "…"`): documented by name at least."""
    return set(re.findall(r"^#\s?([a-z_]+)\s*=", text, flags=re.MULTILINE))


def test_every_key_of_the_example_config_is_documented():
    text = (ROOT / "config.example.toml").read_text(encoding="utf-8")
    documented = documented_paths(CONFIGURATION.read_text(encoding="utf-8"))
    paths = example_paths(tomllib.loads(text), Config)
    assert {("discord", "token_env"), ("agents", "defaults", "subagents", "max_concurrent")} <= paths
    missing = sorted(".".join(p) for p in paths if p not in documented)
    assert missing == [], f"config.example.toml keys not documented in docs/configuration.md: {missing}"
    names = {path[-1] for path in documented if path}
    shown = sorted(key for key in commented_keys(text) if key not in names)
    assert shown == [], f"commented keys of config.example.toml not documented in docs/configuration.md: {shown}"


def test_every_field_of_the_config_models_is_documented():
    documented = documented_paths(CONFIGURATION.read_text(encoding="utf-8"))
    paths = model_paths(Config)
    assert {("discord", "token_env"), ("agents", "list", ANY, "subagents", "model"), ("schedules",)} <= paths
    missing = sorted(".".join(p) for p in paths if p not in documented)
    assert missing == [], f"config fields not documented in docs/configuration.md: {missing}"


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def anchors(path: Path) -> set[str]:
    return {_slug(h) for h in re.findall(r"^#{1,6}\s+(.+)$", _without_code_blocks(path.read_text("utf-8")), re.M)}


def links(path: Path) -> list[str]:
    """The relative targets of a document's links (inline code and code blocks left out)."""
    text = re.sub(r"`[^`\n]*`", "", _without_code_blocks(path.read_text(encoding="utf-8")))
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


DOCUMENTS = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_relative_link_resolves_with_its_anchor():
    assert len(DOCUMENTS) >= 6  # the README, CONTRIBUTING.md and the four documents of docs/
    broken = []
    for document in DOCUMENTS:
        for target in links(document):
            file, _, fragment = target.partition("#")
            resolved = (document.parent / file).resolve() if file else document
            if not resolved.exists():
                broken.append(f"{document.name}: {target} (no such file)")
            elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
                broken.append(f"{document.name}: {target} (no such heading)")
    assert broken == []


def slash_commands() -> set[str]:
    """Every slash command the cogs register, with its group: `/subagents spawn`, `/session idle`, `/stop`."""
    found: set[str] = set()
    for cog in sorted((ROOT / "cogs").glob("*.py")):
        for cls in (n for n in ast.walk(ast.parse(cog.read_text(encoding="utf-8"))) if isinstance(n, ast.ClassDef)):
            group = next((_string(k.value) for k in cls.keywords if k.arg == "group_name"), None)
            groups = {  # `session = app_commands.Group(name="session", …)`
                target.id: _keyword(node.value, "name")
                for node in cls.body
                if isinstance(node, ast.Assign) and _called(node.value, "Group")
                for target in node.targets
                if isinstance(target, ast.Name)
            }
            for method in (n for n in cls.body if isinstance(n, ast.AsyncFunctionDef)):
                for decorator in method.decorator_list:
                    if not _called(decorator, "command"):
                        continue
                    owner = decorator.func.value  # type: ignore[attr-defined]  # _called: an attribute call
                    name = _keyword(decorator, "name") or method.name
                    if isinstance(owner, ast.Name) and owner.id in groups:
                        found.add(f"/{groups[owner.id]} {name}")
                    else:
                        found.add(f"/{group} {name}" if group else f"/{name}")
    return found


def _called(node: ast.AST, attribute: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attribute


def _keyword(call: ast.AST, name: str) -> str | None:
    assert isinstance(call, ast.Call)
    return next((_string(k.value) for k in call.keywords if k.arg == name), None)


def _string(node: ast.AST) -> str:
    assert isinstance(node, ast.Constant) and isinstance(node.value, str)
    return node.value


def test_the_readme_is_a_manual_with_every_command_in_its_table():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    commands = slash_commands()
    assert {"/subagents spawn", "/stop", "/session idle", "/settings budgets", "/schedule add"} <= commands
    first_cells = [row.split("|")[1] for row in text.splitlines() if row.startswith("| `")]
    missing = sorted(c for c in commands if not any(re.search(rf"`{re.escape(c)}[` ]", cell) for cell in first_cells))
    assert missing == [], f"slash commands missing from the README's table: {missing}"
    assert any("@bot" in cell for cell in first_cells), "mentioning the bot belongs in the table too"


def test_no_issue_or_part_numbers_and_no_pointers_outside_the_repository():
    pattern = re.compile(r"issue [0-9]|Part [0-9]|reference/|\.\./shared")
    lines = [f"{d.name}: {line}" for d in DOCUMENTS for line in d.read_text(encoding="utf-8").splitlines()]
    found = [line for line in lines if pattern.search(line)]
    assert found == []
