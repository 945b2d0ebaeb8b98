"""The engine's ports: what the other wings implement so the engine imports none of them.

Each protocol names only what the engine calls. The assembly hands the engine an object of another wing that
satisfies it (durable runs, tools, threads, budgets).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model
from pydantic_ai.tools import DeferredToolResults
from pydantic_ai.toolsets import AbstractToolset

from bot.agents.runner import RunOutcome
from bot.agents.streaming import TextSink
from bot.agents.tool_gate import ToolGate
from bot.core.runs.settlement import AfterCommit
from bot.core.runs.spawn_policy import SpawnArgs, SpawnPlan
from bot.records import Binding, Origin, Run, Session
from storage.db import Connection
from storage.usage import Payer

T = TypeVar("T")
RunBody = Callable[[Run, Session, bool, bool], Coroutine[object, object, None]]  # (run, its session, woken, durable)


class Launcher(Protocol):
    """Where and when a run starts: a task here, or a durable workflow any process may take."""

    @property
    def durable(self) -> bool: ...

    async def place(self, tx: Connection, run: Run, *, delegated: bool) -> bool: ...

    def queue(self, run_id: str, *, placed: bool = False) -> None: ...

    def wake(self, run_id: str) -> None: ...

    def kill(self, run_id: str) -> None: ...


class Journal(Protocol):
    """Store work done once per step of a durable run: a replay reads back what the first execution returned."""

    async def step(
        self,
        run_id: str,
        name: str,
        work: Callable[[Connection], Awaitable[T]],
        encode: Callable[[T], str],
        decode: Callable[[str], T],
        tx: Connection | None = None,  # in the caller's transaction, with its work
    ) -> T: ...

    def first_execution(self) -> bool:
        """Whether the run's code executes for the first time: no execution before it stored anything."""
        ...


@dataclass(frozen=True)
class TurnTools:
    """What a turn's model may call, and the rules its calls go through."""

    toolsets: list[AbstractToolset[Any]]
    deps: object
    gate: ToolGate
    parallel_tools: bool
    request_limit: int | None
    dedup_exempt: frozenset[str]
    context: str = ""  # more of the system prompt for this turn (memories recalled for it), or nothing


class TurnSetup(Protocol):
    """A turn's tools, its model's spending meter, and its pauses for people's approval."""

    async def tools(self, run: Run, session: Session) -> TurnTools: ...

    def metered(self, model: Model, run: Run, session: Session) -> Model: ...

    async def record(self, tx: Connection, run: Run, session: Session, messages: Sequence[ModelMessage]) -> bool: ...

    async def pause(self, run: Run, session: Session, outcome: RunOutcome) -> AfterCommit: ...

    async def decisions(self, run_id: str) -> DeferredToolResults | None: ...


class Harness(Protocol):
    """A harness session's turn, run by its ACP agent instead of the bot's runtime."""

    async def turn(self, run: Run, session: Session, prompt: str, cancelled: Callable[[], bool]) -> RunOutcome: ...


class Drafts(Protocol):
    """Answers shown while they are written: a turn's text as it arrives, let go of when the turn is done."""

    async def sink(self, run: Run, session: Session) -> TextSink | None: ...

    async def finished(self, run_id: str) -> None: ...

    async def settled(self, run_id: str) -> None: ...


class Admission(Protocol):
    """The budget caps a new run must fit: checked early, and again in the transaction that persists it."""

    async def check(self, payer: Payer, *, top_level: bool) -> None: ...

    async def admit(self, tx: Connection, run: Run) -> None: ...


class SpawnGuard(Protocol):
    """A requester's policy envelope: what a child it spawns may never exceed."""

    async def vet_spawn(self, requester: Session, requester_run: Run, args: SpawnArgs, plan: SpawnPlan) -> None: ...


class ThreadOpener(Protocol):
    """Opening and introducing the thread a spawned session lives in."""

    async def open_thread(self, plan: SpawnPlan, origin: Origin) -> Binding: ...

    def archived_if_refused(self, binding: Binding | None) -> AbstractAsyncContextManager[None]: ...

    async def introduce(self, binding: Binding, label: str) -> None: ...

    def bound(self, thread_id: int, session_key: str) -> None: ...


class Archive(Protocol):
    """Archive deadlines of finished sessions, written as runs settle."""

    async def mark_deadline(self, tx: Connection, session: Session, now: float) -> float | None: ...

    def scheduled(self, when: float) -> None: ...

    async def archive(self, session_key: str) -> bool: ...


class TaskRecords(Protocol):
    """A delegated task's record, settled in the transaction that ends its run."""

    async def settle(self, tx: Connection, run: Run, now: float, *, killed_directly: bool = False) -> Any: ...


class RunEnds(Protocol):
    """Told when runs end, after the commit: thread bindings that end with a run, approvals left waiting."""

    async def end_run_bindings(self, run_id: str) -> None: ...


class PendingApprovals(Protocol):
    """Approval requests still waiting, closed when their runs are killed."""

    async def runs_ended(self, run_ids: list[str]) -> None: ...
