"""Every third-party module the code imports comes from a distribution ``pyproject.toml`` declares, pinned: the
bot's, cogs' and storage's in ``[project] dependencies``; the tests' and the benchmarks' (run from a checkout with
the ``test`` extra, as the tests are) there or in that extra. A module that arrives only as a dependency of a
dependency would vanish, or change, when that one does."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = {"bot", "cogs", "storage", "bench", "tests"}
RUNTIME = ("bot", "cogs", "storage")


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(requirements: list[str]) -> dict[str, str]:
    """Each requirement's normalized distribution name, with the requirement as written."""
    names = {}
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        assert name is not None, f"not a requirement: {requirement!r}"
        names[normalized(name[0])] = requirement
    return names


def imported(folders: tuple[str, ...]) -> dict[str, str]:
    """The top-level modules the code in ``folders`` imports (absolute imports, outside the standard library and
    the project), each with one file that imports it."""
    found: dict[str, str] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.partition(".")[0]
                    if top not in sys.stdlib_module_names and top not in PROJECT:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def undeclared(modules: dict[str, str], allowed: dict[str, str]) -> list[str]:
    distributions = packages_distributions()
    missing = []
    for module, where in sorted(modules.items()):
        providers = {normalized(name) for name in distributions.get(module, [])}
        if not providers:
            missing.append(f"{module} (imported in {where}) is not installed by any distribution")
        elif not providers & set(allowed):
            missing.append(f"{module} (imported in {where}) comes from {sorted(providers)}, which is not declared")
    return missing


PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DEPENDENCIES = declared(PYPROJECT["dependencies"])
TEST_EXTRA = declared(PYPROJECT["optional-dependencies"]["test"])


def test_every_third_party_module_the_bot_imports_is_a_declared_dependency():
    assert undeclared(imported(RUNTIME), DEPENDENCIES) == []


def test_every_third_party_module_the_tests_and_benchmarks_import_is_declared_for_them():
    assert undeclared(imported(("tests", "bench")), DEPENDENCIES | TEST_EXTRA) == []


def test_every_declared_requirement_is_pinned():
    extras = PYPROJECT["optional-dependencies"].values()
    requirements = [*PYPROJECT["dependencies"], *(requirement for extra in extras for requirement in extra)]
    assert [requirement for requirement in requirements if "==" not in requirement] == []
