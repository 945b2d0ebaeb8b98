"""ACP agents as sub-agents: one Agent Client Protocol session per sub-agent session, over a subprocess's stdio.

The bot is the ACP client. A session's first prompt starts the ``[acp_agents.<name>]`` command (its environment
trimmed as an MCP server's, :mod:`bot.agents.child_env`) and opens an ACP session in its ``cwd``; later prompts of
the same sub-agent session reuse it while the process lives, and a new one is started when it died or the bot
restarted (an ACP session does not survive a restart). Streamed updates reach the caller as activity lines, the
agent's permission requests as questions to people, and its file requests are confined to ``cwd``: a path that
resolves outside it (``..``, a symlink, an absolute path elsewhere) is refused. Terminals are not offered.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import structlog
from acp import PROTOCOL_VERSION, Client, RequestError, spawn_agent_process, text_block
from acp.core import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    WriteTextFileResponse,
)

from bot.agents.child_env import child_environment
from bot.config import AcpAgentConfig

log = structlog.get_logger(__name__)

MAX_LIVE_SESSIONS = 16
"""ACP processes kept between prompts; the least recently used idle one is stopped for a new one."""
MAX_REPLY_CHARS = 64 * 1024  # what a turn keeps of the agent's message
MAX_FILE_BYTES = 1024 * 1024  # what the agent may read or write in one request
CANCEL_GRACE_SECONDS = 5.0  # how long a cancelled prompt may take to end before it is dropped
Ending = Literal["completed", "cancelled", "failed", "timed_out"]


class TurnHooks(Protocol):
    """What one prompt tells its caller as it runs, and asks of it."""

    async def activity(self, line: str) -> None: ...

    async def permission(self, title: str, details: str) -> bool: ...


@dataclass(frozen=True)
class AcpReply:
    """How a prompt ended, and the agent's message.

    When it did not complete, the message is what the agent had said so far."""

    ending: Ending
    text: str
    error: str | None = None


def confined(cwd: Path, path: str) -> Path:
    """``path`` resolved inside ``cwd`` (relative paths from it); a :class:`RequestError` if it leads outside."""
    resolved = (cwd / path).resolve()
    if not resolved.is_relative_to(cwd):
        raise RequestError.invalid_params({"path": path, "reason": f"outside the working directory {cwd}"})
    return resolved


def _tool_line(update: ToolCallStart | ToolCallProgress) -> str:
    status = f" ({update.status.replace('_', ' ')})" if update.status else ""
    return f"🔧 {update.title or update.tool_call_id}{status}"


def _plan_line(update: AgentPlanUpdate) -> str:
    marks = {"completed": "✓", "in_progress": "…", "pending": "·"}
    return "📋 " + "; ".join(f"{marks.get(entry.status, '·')} {entry.content}" for entry in update.entries)


class _Client:
    """The bot's side of one ACP session: updates, permission questions and files, for the prompt in flight."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.hooks: TurnHooks | None = None
        self.text: list[str] = []
        self.kept = 0  # characters in ``text``
        self.titles: dict[str, str] = {}  # tool call ids' titles, for updates that omit theirs

    def reply(self) -> str:
        return "".join(self.text)[:MAX_REPLY_CHARS]

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            if self.kept < MAX_REPLY_CHARS:
                self.text.append(update.content.text[: MAX_REPLY_CHARS - self.kept])
                self.kept += len(self.text[-1])
            return
        line = None
        if isinstance(update, ToolCallStart | ToolCallProgress):
            if update.title and len(self.titles) < 1000:
                self.titles[update.tool_call_id] = update.title
            elif not update.title:
                update = update.model_copy(update={"title": self.titles.get(update.tool_call_id)})
            line = _tool_line(update)
        elif isinstance(update, AgentPlanUpdate):
            line = _plan_line(update)
        if line is not None and self.hooks is not None:
            await self.hooks.activity(line)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        title = tool_call.title or self.titles.get(tool_call.tool_call_id) or tool_call.tool_call_id
        details = ", ".join(f"{option.name} ({option.kind})" for option in options)
        approved = self.hooks is not None and await self.hooks.permission(title, details)
        wanted = ("allow_once", "allow_always") if approved else ("reject_once", "reject_always")
        chosen = next((option for kind in wanted for option in options if option.kind == kind), None)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        target = confined(self.cwd, path)
        if not target.is_file():
            raise RequestError.resource_not_found(path)
        if target.stat().st_size > MAX_FILE_BYTES:
            raise RequestError.invalid_params({"path": path, "reason": f"larger than {MAX_FILE_BYTES} bytes"})
        lines = target.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        start = max(0, (line or 1) - 1)
        return ReadTextFileResponse(content="".join(lines[start : start + limit if limit else None]))

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        target = confined(self.cwd, path)
        if len(content.encode("utf-8")) > MAX_FILE_BYTES:
            raise RequestError.invalid_params({"path": path, "reason": f"larger than {MAX_FILE_BYTES} bytes"})
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return WriteTextFileResponse()

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/create")  # not offered: nothing would confine a command

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


class AcpUnavailable(Exception):
    """An ACP agent that could not start or open a session."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"ACP agent '{name}' is unavailable: {reason}")


def _reason(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:200]


class AcpSession:
    """One ACP agent process and the ACP session opened in it."""

    def __init__(self, name: str, config: AcpAgentConfig, environ: Mapping[str, str]) -> None:
        self.name = name
        self._config = config
        self._environ = environ
        self._client = _Client(Path(config.cwd))
        self._stack = AsyncExitStack()
        self._conn: ClientSideConnection | None = None
        self._process: asyncio.subprocess.Process | None = None
        self.session_id = ""
        self.busy = False

    @property
    def alive(self) -> bool:
        return self._conn is not None and self._process is not None and self._process.returncode is None

    async def open(self) -> None:
        """Start the process, initialize, open a session (raises :class:`AcpUnavailable`)."""
        config = self._config
        try:
            async with asyncio.timeout(config.timeout_seconds):
                self._conn, self._process = await self._stack.enter_async_context(
                    spawn_agent_process(
                        cast(Client, self._client),  # implements what the bot offers; the rest is refused
                        config.command,
                        *config.args,
                        env=child_environment(config.env_from, self._environ),
                        cwd=config.cwd,
                        transport_kwargs={"stderr": asyncio.subprocess.DEVNULL},
                    )
                )
                assert self._conn is not None
                fs = FileSystemCapabilities(read_text_file=True, write_text_file=True)
                await self._conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(fs=fs, terminal=False),
                    client_info=Implementation(name="threadbound", version="1"),
                )
                self.session_id = (await self._conn.new_session(cwd=config.cwd, mcp_servers=[])).session_id
        except Exception as error:
            await self.close()
            raise AcpUnavailable(self.name, _reason(error)) from None

    async def prompt(
        self, text: str, hooks: TurnHooks, cancelled: Callable[[], bool], timeout_seconds: float | None
    ) -> AcpReply:
        """Send one prompt and follow it to its end: ``cancelled`` (polled) sends ``session/cancel``."""
        assert self._conn is not None
        self._client.hooks, self._client.text, self._client.kept = hooks, [], 0
        asked = asyncio.ensure_future(self._conn.prompt(session_id=self.session_id, prompt=[text_block(text)]))
        deadline = time.monotonic() + timeout_seconds if timeout_seconds else None
        ending: Ending | None = None
        dropped_at = None
        try:
            while not asked.done():
                await asyncio.wait({asked}, timeout=0.1)
                if ending is None and (cancelled() or (deadline is not None and time.monotonic() >= deadline)):
                    ending = "cancelled" if cancelled() else "timed_out"
                    dropped_at = time.monotonic() + CANCEL_GRACE_SECONDS
                    log.info("acp_cancel_sent", agent=self.name, ending=ending)
                    with contextlib.suppress(Exception):
                        await self._conn.cancel(session_id=self.session_id)
                if dropped_at is not None and time.monotonic() >= dropped_at and not asked.done():
                    asked.cancel()
                    await self.close()
                    break
            response = None if asked.cancelled() else asked.result()
        except Exception as error:
            await self.close()
            return AcpReply(
                ending or "failed", self._client.reply(), f"ACP agent '{self.name}' failed: {_reason(error)}"
            )
        finally:
            self._client.hooks = None
        if ending is not None or response is None or response.stop_reason == "cancelled":
            return AcpReply(ending or "cancelled", self._client.reply())
        if response.stop_reason in ("refusal", "max_tokens", "max_turn_requests"):
            reason = response.stop_reason.replace("_", " ")
            return AcpReply("failed", self._client.reply(), f"ACP agent '{self.name}' stopped: {reason}")
        return AcpReply("completed", self._client.reply())

    async def close(self) -> None:
        self._conn = None
        with contextlib.suppress(Exception):
            await self._stack.aclose()


class AcpAgents:
    """The configured ACP agents, and each sub-agent session's ACP session."""

    def __init__(self, agents: Mapping[str, AcpAgentConfig], environ: Mapping[str, str] | None = None) -> None:
        self._agents = dict(agents)
        self._environ = os.environ if environ is None else environ
        self._live: OrderedDict[str, AcpSession] = OrderedDict()  # by sub-agent session key, least recent first

    @property
    def names(self) -> list[str]:
        return sorted(self._agents)

    async def prompt(
        self,
        key: str,
        name: str,
        text: str,
        hooks: TurnHooks,
        cancelled: Callable[[], bool],
        timeout_seconds: float | None,
    ) -> AcpReply:
        """Prompt sub-agent session ``key``'s ACP session of agent ``name``.

        The session is opened now if it has none alive."""
        session = self._live.get(key)
        if session is None or not session.alive:
            if session is not None:
                await self.close(key)
            if name not in self._agents:
                return AcpReply("failed", "", f"ACP agent '{name}' is not configured")
            session = AcpSession(name, self._agents[name], self._environ)
            try:
                await session.open()
            except AcpUnavailable as error:
                return AcpReply("failed", "", str(error))
            await self._make_room()
            self._live[key] = session
            log.info("acp_session_opened", agent=name, acp_session_id=session.session_id)
        self._live.move_to_end(key)
        session.busy = True
        try:
            return await session.prompt(text, hooks, cancelled, timeout_seconds)
        finally:
            session.busy = False

    async def probe(self, name: str) -> str | None:
        """Start agent ``name`` and open a session, then stop it: why it cannot, or ``None``."""
        session = AcpSession(name, self._agents[name], self._environ)
        try:
            await session.open()
        except AcpUnavailable as error:
            return str(error).removeprefix(f"ACP agent '{name}' ")
        await session.close()
        return None

    async def _make_room(self) -> None:
        idle = [key for key, session in self._live.items() if not session.busy]
        for key in idle[: max(0, len(self._live) - MAX_LIVE_SESSIONS + 1)]:
            await self.close(key)

    async def close(self, key: str) -> None:
        """Stop sub-agent session ``key``'s ACP process, if it has one."""
        session = self._live.pop(key, None)
        if session is not None:
            await session.close()

    async def close_all(self) -> None:
        for key in list(self._live):
            await self.close(key)
