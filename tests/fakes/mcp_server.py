"""An MCP server for the tests, written with the official ``mcp`` SDK: its tools record every call (one JSON line
per call in the file named by ``MCP_CALLS_FILE``), so a test can see what ran and with which arguments; each start
of the server is one line in the file named by ``MCP_STARTS_FILE``, so a test can count the processes started.

``python tests/fakes/mcp_server.py`` serves stdio; ``--http PORT`` serves Streamable HTTP on 127.0.0.1:PORT.
``die`` ends the server's process in the middle of a call, like a server that crashes. ``add`` is marked read-only
(``readOnlyHint``), the others are not. ``--big`` adds ``big``, which answers with as many bytes as asked.
"""

from __future__ import annotations

import argparse
import json
import os

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("testtools")


def _record(tool: str, **arguments: object) -> None:
    path = os.environ.get("MCP_CALLS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as calls:
            calls.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    _record("add", a=a, b=b)
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Say the text in capitals, with the secret greeting from the environment."""
    _record("shout", text=text)
    return f"{os.environ.get('GREETING', 'HEY')} {text.upper()}"


@server.tool()
def env(name: str) -> str:
    """What the server's environment holds under ``name`` (tests check what reaches it)."""
    _record("env", name=name)
    return os.environ.get(name, "(unset)")


def big(size: int) -> str:
    """A text of ``size`` bytes: numbered lines of digits (tests of what a huge result becomes)."""
    _record("big", size=size)
    lines = "".join(f"line {i:07d} " + "0123456789" * 5 + "\n" for i in range(size // 64 + 1))
    return lines[:size]


@server.tool()
def die() -> str:
    """Crash the server (for tests of a server that dies mid-run)."""
    _record("die")
    os._exit(3)


def main() -> None:
    if path := os.environ.get("MCP_STARTS_FILE"):
        with open(path, "a", encoding="utf-8") as starts:
            starts.write(json.dumps({"pid": os.getpid()}) + "\n")
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None, help="serve Streamable HTTP on this port")
    parser.add_argument("--big", action="store_true", help="add the tool 'big'")
    args = parser.parse_args()
    if args.big:
        server.tool()(big)
    if args.http is not None:
        server.run(transport="streamable-http", port=args.http)
    else:
        server.run(transport="stdio")


if __name__ == "__main__":
    main()
