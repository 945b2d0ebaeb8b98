"""MCP servers as tool sources: one pydantic-ai ``MCPToolset`` per ``[mcp.servers.<name>]``.

Its tools are named ``<server>__<tool>``. A server that cannot start, or dies in the middle of a run, fails that
run with ``MCP server '<name>' is unavailable: <reason>`` — never a hang: starting and every call have the server's
``timeout_seconds``. A tool's own error is not a failure of the server: the model reads it and may try again.

``/subagents tools`` asks each server for its tool list at most once a :data:`LISTING_SECONDS` (a server that could
not start is tried again after the same time), and callers that ask together share one listing: a command typed
again and again starts no process per call.

The server's process gets only ``HOME``, ``PATH``, ``SHELL`` and ``TERM`` of the bot's environment, plus what its
``env_from`` names: the bot's token and API keys never reach it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import ClientTransport, StdioTransport, StreamableHttpTransport
from fastmcp.exceptions import ToolError
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.exceptions import AgentRunError
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from bot.agents.child_env import child_environment
from bot.config import McpServerConfig

TOOL_SEPARATOR = "__"
LISTING_SECONDS = 60.0
"""How long a server's tool list, or why it could not be listed, is kept for ``/subagents tools``."""


class McpUnavailable(AgentRunError):
    """An MCP server that could not be reached: the run that needed it fails, naming it."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"MCP server '{server}' is unavailable: {reason}")


class _Unreachable(Exception):
    """A server that could not start or list its tools, and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _reason(error: BaseException) -> str:
    """A short cause, never a traceback.

    An exception group says what its first failure was."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text.removeprefix("Client failed to connect: ")[:200]


@dataclass
class _Guarded(WrapperToolset[Any]):
    """Turns a server's connection failures into :class:`McpUnavailable`; a tool's own error goes to the model."""

    server: str = ""
    broken: bool = False  # its connection failed: runs that start later get a new one

    def _unavailable(self, error: BaseException) -> McpUnavailable:
        self.broken = True
        return McpUnavailable(self.server, _reason(error))

    async def __aenter__(self) -> _Guarded:
        try:
            await super().__aenter__()
        except Exception as error:
            raise McpUnavailable(self.server, _reason(error)) from None
        return self

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        try:
            return await super().get_tools(ctx)
        except Exception as error:
            raise self._unavailable(error) from None

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        try:
            return await super().call_tool(name, tool_args, ctx, tool)
        except ToolError as error:
            raise ModelRetry(str(error)) from None
        except ModelRetry:
            raise
        except Exception as error:
            raise self._unavailable(error) from None


def _transport(server: McpServerConfig, environ: Mapping[str, str]) -> ClientTransport:
    if server.url is not None:
        return StreamableHttpTransport(server.url)
    assert server.command is not None, "validated: a server has a command or a url"
    env = child_environment(server.env_from, environ)
    return StdioTransport(server.command, list(server.args), env=env, keep_alive=False)  # ends with its last run


@dataclass(frozen=True)
class _Listing:
    listed_at: float
    names: list[str]
    unavailable: str | None = None  # why the server could not list its tools


class McpServers:
    """The configured MCP servers' toolsets, built once; pydantic-ai connects one when a run that uses it starts
    (shared by the runs in flight) and closes it when the last of them ends. Once its connection failed (the
    server died or stopped answering), runs that start later get a new one, not the dead one the others hold.
    Their tool lists are kept :data:`LISTING_SECONDS` by ``clock``."""

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        environ: Mapping[str, str] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._servers = dict(servers)
        self._environ = os.environ if environ is None else environ
        self._clock = clock
        self._toolsets: dict[str, tuple[_Guarded, AbstractToolset[Any]]] = {}
        self._listings: dict[str, _Listing] = {}  # by configured server
        self._listing: dict[str, asyncio.Future[_Listing]] = {}  # the one listing in flight per server

    def toolset(self, name: str) -> AbstractToolset[Any]:
        """Server ``name``'s tools as ``<name>__<tool>``."""
        if name not in self._toolsets or self._toolsets[name][0].broken:
            guarded = _Guarded(MCPToolset(self._client(name), id=name, tool_error_behavior="error"), server=name)
            self._toolsets[name] = (guarded, guarded.prefixed(f"{name}_"))  # the prefix and "_": <name>__<tool>
        return self._toolsets[name][1]

    def _client(self, name: str) -> Client[Any]:
        server = self._servers[name]
        transport = _transport(server, self._environ)
        return Client(transport, init_timeout=server.timeout_seconds, timeout=server.timeout_seconds)

    async def tool_names(self, name: str) -> list[str]:
        """Server ``name``'s tools as the model sees them (raises :class:`McpUnavailable`): the list kept from the
        last :data:`LISTING_SECONDS`, else the listing in flight, else a new one (the server started for it)."""
        kept = self._listings.get(name)
        if kept is None or self._clock() - kept.listed_at >= LISTING_SECONDS:
            if name not in self._listing:
                self._listing[name] = asyncio.ensure_future(self._list(name))
                self._listing[name].add_done_callback(lambda _: self._listing.pop(name, None))
            kept = await asyncio.shield(self._listing[name])  # a caller that gives up leaves it to the others
        if kept.unavailable is not None:
            raise McpUnavailable(name, kept.unavailable)
        return list(kept.names)

    async def _list(self, name: str) -> _Listing:
        """Start server ``name`` and list its tools; kept, whatever the answer."""
        try:
            tools = await self._own_tool_names(name)
            listing = _Listing(self._clock(), sorted(f"{name}{TOOL_SEPARATOR}{tool}" for tool in tools))
        except _Unreachable as error:
            listing = _Listing(self._clock(), [], unavailable=error.reason)
        self._listings[name] = listing
        return listing

    async def _own_tool_names(self, name: str) -> list[str]:
        """Start server ``name`` and list its tools as it names them (raises :class:`_Unreachable`)."""
        try:
            async with asyncio.timeout(self._servers[name].timeout_seconds * 2):
                async with self._client(name) as client:
                    tools = await client.list_tools()
        except Exception as error:
            raise _Unreachable(_reason(error)) from None
        return [tool.name for tool in tools]

    async def probe(self, name: str) -> str | None:
        """What is wrong with server ``name``, or ``None`` (for ``--check``).

        Wrong: it cannot start and list its tools, or its ``read_only_tools`` name tools it does not have."""
        try:
            tools = await self._own_tool_names(name)
        except _Unreachable as error:
            return f"cannot start: {error.reason}"
        unknown = [tool for tool in self._servers[name].read_only_tools or [] if tool not in tools]
        if unknown:
            return f"read_only_tools names tools the server does not have: {', '.join(unknown)}"
        return None
