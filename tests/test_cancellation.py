"""No waits that can swallow a cancellation: ``asyncio.timeout``, never ``asyncio.wait_for``, in the bot's code.

On Python 3.11 ``asyncio.wait_for`` catches a cancellation that arrives just as what it waits for completes, and
returns its result instead (``bot/waiting.py``). The task goes on as if nothing happened, so whatever cancelled it
and awaits its end waits for ever: a streamed answer's draft task cancelled as an edit completes would go back to
waiting, and the run's end, with its answer's last part, would wait on it. Checked by walking every module (``ast``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layers import PROJECT, ROOT


def _wait_fors(path: Path) -> list[str]:
    """Where ``path`` calls ``asyncio.wait_for``, or imports it by name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        called = isinstance(node, ast.Attribute) and node.attr == "wait_for"
        if called and isinstance(node.value, ast.Name) and node.value.id == "asyncio":
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        if isinstance(node, ast.ImportFrom) and node.module == "asyncio":
            found += [f"{path.relative_to(ROOT)}:{node.lineno}" for name in node.names if name.name == "wait_for"]
    return found


def test_no_module_waits_with_asyncio_wait_for():
    modules = [path for package in PROJECT for path in sorted((ROOT / package).rglob("*.py"))]
    assert len(modules) > 100  # the walk found the code base
    assert [site for path in modules for site in _wait_fors(path)] == []
