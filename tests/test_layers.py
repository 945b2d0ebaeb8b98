"""The layers of the code base, checked by walking every module's imports (``ast``, nothing is executed):

- the core (``bot/core``) never imports discord, the cogs, the Discord adapter or the bot;
- storage imports nothing of the project but the records (``bot/records.py``) and itself;
- the agent runtime (``bot/agents``) never imports the core;
- the records import nothing of the project;
- cogs import the Bot type only under ``TYPE_CHECKING``; the Discord adapter never imports the bot at all;
- the adapter and the cogs read of ``interaction.client`` only discord.py's own attributes (no service locator);
- nothing reaches the repositories through the orchestrator (they come from ``bot/app.py``);
- no module of the core is longer than one sitting's reading;
- the core's wings import each other only along their corridors, and none imports the façade or the assembly;
- outside the core, the orchestrator is only called: every ``orchestrator.<name>`` is one of its methods.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import discord
import pytest

from bot.core.orchestrator import Orchestrator

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ("bot", "cogs", "storage")
MAX_CORE_MODULE_LINES = 300
MAX_WING_MODULES = 16
# Modules directly under bot/core that every wing may import: small leaves with no rooms of the wings in them.
LEAVES = {
    "attachments",
    "context",
    "deadline_sweep",
    "errors",
    "guild_settings",
    "limits",
    "run_traces",
    "runtimes",
    "server_cache",
    "signals",
    "stats",
    "timers",
}
# Which wings each wing may import (besides itself and the leaves). The engine (runs) imports no other wing.
CORRIDORS = {
    "runs": set(),
    "durable": {"runs"},
    "oversight": {"runs", "files"},
    "budgets": {"runs"},
    "threads": {"runs"},
    "jobs": {"runs", "durable", "budgets"},
    "memory": set(),
    "tools": {"runs", "durable", "budgets", "oversight", "memory", "files"},
    "people": {"runs", "durable", "budgets", "oversight", "threads", "tools", "jobs", "memory", "files"},
    "files": set(),  # the files an agent returns (attach_file), stored with its run
    "drafts": {"runs"},  # answers shown while they are written; handed to the engine as a port
    "harness": set(),  # a harness session's turn, on its ACP agent; handed to the engine as a port
}


def _modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _imports(path: Path, *, runtime_only: bool = False) -> set[str]:
    """Every module ``path`` imports; with ``runtime_only``, leaving out ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped: set[int] = set()
    if runtime_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _offending(folder: str, forbidden, *, runtime_only: bool = False) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(folder)
        for name in sorted(_imports(path, runtime_only=runtime_only))
        if forbidden(name)
    ]


def _under(name: str, *packages: str) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


def _of_project(name: str) -> bool:
    return _under(name, *PROJECT)


def test_the_core_never_imports_discord_the_cogs_the_adapter_or_the_bot():
    assert _offending("bot/core", lambda n: _under(n, "discord", "cogs", "bot.discord_adapter", "bot.app")) == []


def test_storage_imports_only_the_records_of_the_project():
    assert _offending("storage", lambda n: _of_project(n) and not _under(n, "storage", "bot.records")) == []


def test_the_agent_runtime_never_imports_the_core():
    assert _offending("bot/agents", lambda n: _under(n, "bot.core")) == []


def _module_path(name: str) -> Path | None:
    base = ROOT / name.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _reachable(path: Path) -> set[str]:
    """Every project module ``path`` loads, directly or through other project modules."""
    seen: set[str] = set()
    todo = [path]
    while todo:
        for name in _imports(todo.pop()):
            if _of_project(name) and name not in seen and (found := _module_path(name)) is not None:
                seen.add(name)
                todo.append(found)
    return seen


def test_the_agent_runtime_does_not_reach_the_core_through_another_module():
    reached = {
        f"{path.relative_to(ROOT)} reaches {name}"
        for path in _modules("bot/agents")
        for name in _reachable(path)
        if _under(name, "bot.core")
    }
    assert reached == set()


def test_the_records_import_nothing_of_the_project():
    assert [name for name in _imports(ROOT / "bot/records.py") if _of_project(name)] == []


def test_cogs_import_the_bot_type_only_for_type_checking():
    assert _offending("cogs", lambda n: _under(n, "bot.app"), runtime_only=True) == []


def test_the_adapter_never_imports_the_bot():
    """Not even for type checking: what the adapter's parts need, they are given when the bot builds them."""
    assert _offending("bot/discord_adapter", lambda n: _under(n, "bot.app")) == []


def _client_reads(source: str) -> list[str]:
    """Each use of an interaction's ``client`` other than reading one of ``discord.Client``'s own attributes: our
    attributes (``interaction.client.control``), and the client itself handed on (``bot = interaction.client``)."""
    tree = ast.parse(source)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == "client"):
            continue
        if not ast.unparse(node.value).split(".")[-1].endswith("interaction"):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and hasattr(discord.Client, parent.attr):
            continue
        shown = parent if isinstance(parent, ast.Attribute) else node
        found.append(f"line {node.lineno}: {ast.unparse(shown)}")
    return found


@pytest.mark.parametrize("folder", ["bot/discord_adapter", "cogs"])
def test_interactions_are_no_way_to_reach_the_bots_parts(folder):
    found = [
        f"{path.relative_to(ROOT)} {read}" for path in _modules(folder) for read in _client_reads(path.read_text())
    ]
    assert found == []


def test_the_client_reads_check_sees_reads():
    """Guards the check above: it sees our attributes and a handed-on client, and lets discord.py's own pass."""
    source = "a = interaction.client.control\nb = self.interaction.client\nc = interaction.client.user\n"
    assert sorted(_client_reads(source)) == ["line 1: interaction.client.control", "line 2: self.interaction.client"]


@pytest.mark.parametrize("folder", ["bot", "cogs"])
def test_nothing_reaches_the_repositories_through_the_orchestrator(folder):
    reach = re.compile(r"orchestrator\.(sessions|runs|transcripts|outbox|inbox|bindings)\b")
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in _modules(folder)
        if path != ROOT / "bot/core/orchestrator.py"
        for match in reach.finditer(path.read_text())
    ]
    assert found == []


def test_no_core_module_is_longer_than_one_sitting():
    lengths = {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in _modules("bot/core")}
    assert {path: n for path, n in lengths.items() if n > MAX_CORE_MODULE_LINES} == {}


def _core_part(name: str) -> str | None:
    """The wing or root module of the core that a dotted module name belongs to."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["bot", "core"] else None


def test_the_wings_are_the_whole_core():
    wings = {path.name for path in (ROOT / "bot/core").iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert wings == set(CORRIDORS)
    root = {path.stem for path in (ROOT / "bot/core").glob("*.py")} - {"__init__"}
    assert root == LEAVES | {"orchestrator", "assembly"}


@pytest.mark.parametrize("wing", sorted(CORRIDORS))
def test_a_wing_imports_only_along_its_corridors(wing):
    allowed = {wing} | CORRIDORS[wing] | LEAVES
    assert _offending(f"bot/core/{wing}", lambda n: _core_part(n) is not None and _core_part(n) not in allowed) == []


@pytest.mark.parametrize("wing", sorted(CORRIDORS))
def test_a_wing_is_a_handful_of_rooms(wing):
    rooms = [path for path in (ROOT / "bot/core" / wing).glob("*.py") if path.name != "__init__.py"]
    assert len(rooms) <= MAX_WING_MODULES


def test_the_leaves_import_only_leaves():
    offending = [
        f"{path.relative_to(ROOT)} imports {name}"
        for leaf in sorted(LEAVES)
        for path in [ROOT / f"bot/core/{leaf}.py"]
        for name in sorted(_imports(path))
        if _core_part(name) is not None and _core_part(name) not in LEAVES
    ]
    assert offending == []


def test_no_room_receives_the_facade():
    """Only the app, the cogs and the Discord adapter hold the orchestrator; no room of the core imports it."""
    importers = _offending("bot/core", lambda n: n == "bot.core.orchestrator")
    assert [line for line in importers if not line.startswith("bot/core/orchestrator.py")] == []
    assert not hasattr(Orchestrator, "_apply")


def _orchestrator_reaches(path: Path) -> list[str]:
    """Every ``<...>orchestrator.<name>`` in a module, as ``name``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Attribute):
            holder = node.value
            held = holder.attr if isinstance(holder, ast.Attribute) else getattr(holder, "id", "")
            if held.lstrip("_") == "orchestrator":
                found.append(node.attr)
    return found


def test_outside_the_core_the_orchestrator_is_only_called():
    """No one reaches a room through the façade (``orchestrator.queries.history``): it keeps the methods they call."""
    methods = {name for name, member in vars(Orchestrator).items() if inspect.isfunction(member)}
    modules = [*_modules("cogs"), *(path for path in _modules("bot") if "core" not in path.parts)]
    reached = {
        f"{path.relative_to(ROOT)}: orchestrator.{name}" for path in modules for name in _orchestrator_reaches(path)
    }
    assert {line for line in reached if line.rsplit(".", 1)[1] not in methods} == set()
    assert reached  # the walk finds the calls at all


def test_the_facade_keeps_only_what_the_outside_calls():
    """Each public method of the orchestrator is called by the app, a cog or the Discord adapter."""
    methods = {name for name, member in vars(Orchestrator).items() if inspect.isfunction(member)}
    modules = [*_modules("cogs"), *(path for path in _modules("bot") if "core" not in path.parts)]
    called = {name for path in modules for name in _orchestrator_reaches(path)}
    assert {name for name in methods if not name.startswith("_")} - called == set()


def test_the_walk_sees_imports_at_all():
    """Guards the checks above against passing because they found nothing to check."""
    assert "bot.records" in _imports(ROOT / "storage/runs.py")
    assert "discord" in _imports(ROOT / "bot/app.py")
    assert "bot.core.orchestrator" in _imports(ROOT / "bot/app.py")
    assert "bot.core.runs.settlement" in _reachable(ROOT / "bot/app.py")


def test_interactions_are_deferred_in_one_place():
    """Every slash command and button defers through ``bot/discord_adapter/thinking.py``, so the habit (private,
    "thinking…", within Discord's 3 seconds) is said once."""
    defer = re.compile(r"\.response\.defer\(")
    found = [
        str(path.relative_to(ROOT))
        for folder in ("bot", "cogs")
        for path in _modules(folder)
        if path != ROOT / "bot/discord_adapter/thinking.py" and defer.search(path.read_text())
    ]
    assert found == []
