"""Helpers for core tests: the real orchestrator and SQLite, with pydantic-ai FunctionModels as the models."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bot.agents.models import ModelFactory, ResolvedModel, UnknownModelError
from bot.config import Config, StorageConfig, parse_config
from bot.core.context import CoreContext
from bot.core.durable.durable_runs import DurableRuns
from bot.core.orchestrator import Orchestrator
from bot.core.runs.requests import ChatRequest, SpawnAccepted, SpawnRequest
from bot.core.signals import Signals
from bot.core.threads.port import ThreadPort
from bot.core.timers import Timers
from bot.records import Origin
from bot.redaction import Redactor
from storage.db import Database
from storage.repositories import Repositories
from tests import stores
from tests.polling import eventually

ORIGIN = Origin(user_id=7, channel_id=100, conversation="discord:channel:100", guild_id=1, message_id=55)
# One agent on ``test/m``; a finished sub-agent's session is archived ``{minutes}`` after its run ends.
ARCHIVING = """
[agents.defaults]
model = "test/m"
[agents.defaults.subagents]
archive_after_minutes = {minutes}
[agents.list.main]
"""


class ScriptedModels(ModelFactory):
    """Resolves ``test/<name>`` to FunctionModels registered by the test; anything else is unknown."""

    def __init__(self, **functions: Callable) -> None:
        super().__init__({})
        self._functions = functions

    def resolve(self, reference: str, agent: str | None = None) -> ResolvedModel:
        name = reference.removeprefix("test/")
        if name not in self._functions:
            raise UnknownModelError(f"Unknown model {reference!r}.")
        return ResolvedModel(reference, FunctionModel(self._functions[name], model_name=name))


def text(value: str) -> Callable:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(value)])

    return answer


class Gate:
    """A model that blocks until the test opens the gate, so a run can be observed while it is running."""

    def __init__(self, reply: str = "done") -> None:
        self.opened = asyncio.Event()
        self.entered = asyncio.Event()
        self.reply = reply

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.entered.set()
        await self.opened.wait()
        return ModelResponse(parts=[TextPart(self.reply)])


def first_prompt(messages: list[ModelMessage]) -> str:
    """The prompt a run started with (tells a child's requests from its caller's when they share a model)."""
    return next(
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    )


def last_request(messages: list[ModelMessage]) -> ModelRequest:
    return next(m for m in reversed(messages) if isinstance(m, ModelRequest))


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for p in last_request(messages).parts if isinstance(p, ToolReturnPart)]


def decoded(answer: str) -> Any:
    """A tool's answer as the model read it: parsed when JSON, else the bare text (``spawn_subagent``'s)."""
    try:
        return json.loads(answer)
    except ValueError:
        return answer


def user_texts(message: ModelRequest) -> list[str]:
    return [p.content for p in message.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)]


def context(repos: Repositories, config: Config | None = None, clock: Callable[[], float] = time.time) -> CoreContext:
    """A room's context for tests: fresh signals and timers, the default config unless given."""
    config = config or parse_config("")
    return CoreContext(config, repos, clock, Signals(clock), Timers(), Redactor.of(config))


@asynccontextmanager
async def running_core(
    tmp_path, models: ModelFactory, config_text: str, *, threads: ThreadPort | None = None, durable: bool = False
) -> AsyncIterator[Orchestrator]:
    """An orchestrator on a database of ``tmp_path`` (see ``tests/stores.py``); reopening the same path is a restart
    (or another process on the same store, while the first still runs). ``durable``: runs are workflows journaled
    beside it, so one cut off by a restart resumes at the next start."""
    config = parse_config(config_text)
    db = await Database.open(stores.database(tmp_path / "core.sqlite3"))
    journal = DurableRuns(config.durability, StorageConfig(path=str(tmp_path / "core.sqlite3"))) if durable else None
    orchestrator = Orchestrator(config, db, models, threads=threads, durable=journal)
    await orchestrator.start()
    try:
        yield orchestrator
    finally:
        await orchestrator.close()
        await db.close()


async def spawned_and_done(core: Orchestrator) -> SpawnAccepted:
    """A sub-agent of ``main`` spawned in the channel, once its run has ended."""
    accepted = await core.spawn(SpawnRequest(agent_id="main", task="do it", origin=ORIGIN))

    async def done():
        return (await core.runs.get(accepted.run_id)).status.is_terminal

    await settle(core, done)
    return accepted


async def settle(orchestrator: Orchestrator, predicate: Callable[[], object], timeout: float = 10) -> None:
    """Wait until ``predicate()`` (an awaitable check of the database) holds; runs may be blocked on purpose."""
    code = predicate.__code__
    where = f"{Path(code.co_filename).name}:{code.co_firstlineno}"
    await eventually(predicate, timeout=timeout, describe=f"{predicate.__qualname__} ({where}) to hold")


class Script:
    """A main agent that makes the given tool calls one after another, recording what each returned."""

    def __init__(self, *calls: tuple[str, dict]) -> None:
        self.calls = list(calls)
        self.results: list[dict] = []
        self.tools: list[str] = []

    def __call__(self, messages, info):
        self.tools = sorted(t.name for t in info.function_tools)
        for part in tool_returns(messages):
            self.results.append(decoded(part.model_response_str()))
        if len(self.results) < len(self.calls):
            name, args = self.calls[len(self.results)]
            return ModelResponse(parts=[ToolCallPart(name, args)])
        return ModelResponse(parts=[TextPart("done")])


async def chat_and_wait(core, script_text="go"):
    run_id = await core.chat(ChatRequest(text=script_text, origin=ORIGIN))

    async def finished():
        return (await core.runs.get(run_id)).status.is_terminal

    await settle(core, finished)
    return run_id
