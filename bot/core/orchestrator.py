"""The orchestrator: spawn → persist (queued) → lane → running → terminal state + outbox row, crash-safe.

Every state change is written to SQLite before anything else relies on it, and the announcement for a
terminal state is written in the same transaction as the state itself, so a crash can lose neither.
Runs execute in tasks created by the orchestrator's own supervisor task (never inside a caller's context),
so a run never inherits a deadline or a cancellation from whoever asked for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import structlog
from pydantic_ai.messages import ModelMessage

from bot.agents.models import ModelFactory, ResolvedModel, UnknownModelError
from bot.agents.runner import RunOutcome, RunRequest, partial_result, run_agent
from bot.config import AGENT_ID_PATTERN, THINKING_LEVELS, Config
from bot.core.announcements import INTERRUPTED_REASON, announcement_for, idempotency_key
from bot.core.models import Run, RunKind, RunStatus, Session
from storage.db import Database
from storage.outbox import OutboxRepository
from storage.runs import RunRepository
from storage.sessions import SessionRepository
from storage.transcripts import TranscriptRepository

MAX_TASK_CHARS = 4000
MAX_CHAT_CHARS = 4000

log = structlog.get_logger(__name__)


class UserError(Exception):
    """A refusal whose message is written for the person who asked; safe to show as is."""


@dataclass(frozen=True)
class Origin:
    """Who asked, and where: the conversation a request came from and where its answer goes."""

    user_id: int
    channel_id: int
    conversation: str
    guild_id: int | None = None
    message_id: int | None = None


@dataclass(frozen=True)
class SpawnRequest:
    agent_id: str
    task: str
    origin: Origin
    model: str | None = None
    thinking: str | None = None


@dataclass(frozen=True)
class SpawnAccepted:
    run_id: str
    session_key: str
    agent_id: str

    @property
    def short_run_id(self) -> str:
        return self.run_id[:8]


@dataclass(frozen=True)
class ChatRequest:
    text: str
    origin: Origin


def main_session_key(agent_id: str, conversation: str) -> str:
    """The main session of one conversation, e.g. ``agent:main:discord:channel:123``."""
    return f"agent:{agent_id}:{conversation}"


def subagent_session_key(agent_id: str) -> str:
    return f"agent:{agent_id}:subagent:{uuid.uuid4()}"


class Orchestrator:
    def __init__(
        self,
        config: Config,
        db: Database,
        models: ModelFactory,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._db = db
        self._models = models
        self._clock = clock
        self.sessions = SessionRepository(db)
        self.runs = RunRepository(db)
        self.transcripts = TranscriptRepository(db)
        self.outbox = OutboxRepository(db)
        self._subagent_lane = asyncio.Semaphore(config.agents.defaults.subagents.max_concurrent)
        self._session_locks: dict[str, asyncio.Lock] = {}
        self._pending: asyncio.Queue[str] = asyncio.Queue()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._supervisor: asyncio.Task[None] | None = None
        self._outbox_listeners: list[Callable[[], None]] = []

    # -- lifecycle -------------------------------------------------------------------------------------------

    def add_outbox_listener(self, listener: Callable[[], None]) -> None:
        """Called after every transaction that added outbox rows (the delivery worker wakes on it)."""
        self._outbox_listeners.append(listener)

    async def start(self) -> None:
        """Settle what a previous process left behind, then start taking work."""
        await self._interrupt_leftover_runs()
        self._supervisor = asyncio.create_task(self._supervise(), name="orchestrator-supervisor")

    async def close(self) -> None:
        """Stop every task; runs still live stay ``running`` in the database and are settled at next start."""
        tasks = [t for t in (self._supervisor, *self._tasks.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self._supervisor = None

    async def wait_idle(self) -> None:
        """Wait until no run is queued or executing in this process."""
        while self._tasks or not self._pending.empty():
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
            await asyncio.sleep(0)

    # -- commands --------------------------------------------------------------------------------------------

    async def spawn(self, request: SpawnRequest) -> SpawnAccepted:
        """Validate, persist a queued run in a new sub-agent session, and return at once."""
        agent_id = request.agent_id.strip()
        self._check_agent(agent_id)
        task = self._check_text(request.task, what="Task", limit=MAX_TASK_CHARS)
        defaults = self._config.agents.defaults
        model = self._resolve_model(
            request.model or defaults.subagents.model or self._config.agents.list[agent_id].model or defaults.model
        )
        thinking = self._check_thinking(request.thinking or defaults.subagents.thinking, model)

        now = self._clock()
        requester = self._main_session(request.origin, now)
        child = Session(
            key=subagent_session_key(agent_id),
            agent_id=agent_id,
            kind="subagent",
            depth=requester.depth + 1,
            role="leaf",
            requester_session_key=requester.key,
            label=None,
            guild_id=request.origin.guild_id,
            channel_id=request.origin.channel_id,
            owner_user_id=request.origin.user_id,
            created_at=now,
        )
        run = self._new_run(
            child, RunKind.SPAWN, task, model, thinking, defaults.subagents.run_timeout_seconds, request.origin, now
        )
        await self._persist_and_queue(run, requester, child)
        return SpawnAccepted(run_id=run.id, session_key=child.key, agent_id=agent_id)

    async def chat(self, request: ChatRequest) -> str:
        """Queue a main-agent turn in the conversation's session; the answer arrives through the outbox."""
        text = self._check_text(request.text, what="Message", limit=MAX_CHAT_CHARS)
        agent_id = self._config.agents.default_agent
        model = self._resolve_model(self._config.agents.list[agent_id].model or self._config.agents.defaults.model)
        now = self._clock()
        session = self._main_session(request.origin, now)
        run = self._new_run(session, RunKind.CHAT, text, model, None, 0, request.origin, now)
        await self._persist_and_queue(run, session)
        return run.id

    @staticmethod
    def _new_run(
        session: Session,
        kind: RunKind,
        task: str,
        model: ResolvedModel,
        thinking: str | None,
        timeout_seconds: int,
        origin: Origin,
        now: float,
    ) -> Run:
        return Run(
            id=uuid.uuid4().hex,
            session_key=session.key,
            kind=kind,
            status=RunStatus.QUEUED,
            task=task,
            model=model.reference,
            thinking=thinking,
            timeout_seconds=timeout_seconds,
            requester_user_id=origin.user_id,
            guild_id=origin.guild_id,
            channel_id=origin.channel_id,
            source_message_id=origin.message_id,
            created_at=now,
        )

    async def _persist_and_queue(self, run: Run, main: Session, child: Session | None = None) -> None:
        """One transaction: the conversation's main session (if new), the child session, the queued run."""
        async with self._db.transaction() as tx:
            await self.sessions.insert(tx, main, if_missing=True)
            if child is not None:
                await self.sessions.insert(tx, child)
            await self.runs.insert(tx, run)
        log.info("run_queued", run_id=run.id, session_key=run.session_key, kind=run.kind.value)
        self._pending.put_nowait(run.id)

    # -- validation ------------------------------------------------------------------------------------------

    def _check_agent(self, agent_id: str) -> None:
        if not AGENT_ID_PATTERN.match(agent_id):
            raise UserError(
                f"Invalid agent id {agent_id!r}: use 1–64 characters of a-z, 0-9, '-' or '_', "
                "starting with a letter or digit."
            )
        if agent_id not in self._config.agents.list:
            known = ", ".join(sorted(self._config.agents.list))
            raise UserError(f"Unknown agent id {agent_id!r}. Configured agents: {known}.")

    @staticmethod
    def _check_text(text: str, *, what: str, limit: int) -> str:
        stripped = text.strip()
        if not stripped:
            raise UserError(f"{what} must not be empty.")
        if len(stripped) > limit:
            raise UserError(f"{what} is too long ({len(stripped):,} characters; the limit is {limit:,}).")
        return stripped

    def _resolve_model(self, reference: str) -> ResolvedModel:
        try:
            return self._models.resolve(reference)
        except UnknownModelError as exc:
            raise UserError(str(exc)) from None

    @staticmethod
    def _check_thinking(level: str | None, model: ResolvedModel) -> str | None:
        if level is None:
            return None
        if level not in THINKING_LEVELS:
            raise UserError(f"Unknown thinking level {level!r}. Use one of: {', '.join(THINKING_LEVELS)}.")
        if level != "off" and not model.supports_thinking:
            provider = model.reference.partition("/")[0]
            raise UserError(
                f"Model {model.reference} does not support thinking levels. If it does, set "
                f"supports_thinking = true under [providers.{provider}]."
            )
        return level

    def _main_session(self, origin: Origin, now: float) -> Session:
        agent_id = self._config.agents.default_agent
        return Session(
            key=main_session_key(agent_id, origin.conversation),
            agent_id=agent_id,
            kind="main",
            depth=0,
            role="main",
            requester_session_key=None,
            label=None,
            guild_id=origin.guild_id,
            channel_id=origin.channel_id,
            owner_user_id=None,
            created_at=now,
        )

    # -- execution -------------------------------------------------------------------------------------------

    async def _supervise(self) -> None:
        while True:
            run_id = await self._pending.get()
            task = asyncio.create_task(self._execute(run_id), name=f"run-{run_id[:8]}")
            self._tasks[run_id] = task
            task.add_done_callback(lambda _t, rid=run_id: self._tasks.pop(rid, None))

    def _lane(self, run: Run) -> asyncio.Semaphore | asyncio.Lock:
        """Sub-agent runs share the bounded lane; main-agent turns queue one at a time per session."""
        if run.kind is RunKind.SPAWN:
            return self._subagent_lane
        return self._session_locks.setdefault(run.session_key, asyncio.Lock())

    async def _execute(self, run_id: str) -> None:
        run = await self.runs.get(run_id)
        if run is None or run.status is not RunStatus.QUEUED:
            return
        session = await self.sessions.get(run.session_key)
        assert session is not None, f"run {run_id} has no session"
        with structlog.contextvars.bound_contextvars(
            run_id=run.id, session_key=session.key, agent_id=session.agent_id, depth=session.depth
        ):
            async with self._lane(run):
                started = self._clock()
                await self.runs.mark_running(run.id, started)
                log.info("run_started", model=run.model)
                outcome = await self._run(replace(run, status=RunStatus.RUNNING, started_at=started), session)
                await self._finish(replace(run, started_at=started), session, outcome)

    async def _run(self, run: Run, session: Session) -> RunOutcome:
        agent = self._config.agents.list[session.agent_id]
        history = await self.transcripts.history(session.key)

        async def persist(messages: Sequence[ModelMessage]) -> None:
            await self.transcripts.append(session.key, run.id, messages)

        request = RunRequest(
            prompt=run.task,
            system_prompt=agent.system_prompt or self._config.agents.defaults.system_prompt,
            model=self._models.resolve(run.model),
            history=history,
            thinking=run.thinking,
            timeout_seconds=run.timeout_seconds,
        )
        return await run_agent(request, on_step=persist)

    async def _finish(self, run: Run, session: Session, outcome: RunOutcome) -> None:
        ended = self._clock()
        finished = replace(
            run,
            status=outcome.status,
            ended_at=ended,
            result_text=outcome.result_text,
            error=outcome.error,
            usage=outcome.usage,
        )
        async with self._db.transaction() as tx:
            changed = await self.runs.finish(
                tx, run.id, outcome.status, ended,
                result_text=outcome.result_text, error=outcome.error, usage=outcome.usage,
            )
            if not changed:
                return
            await self.transcripts.replace_run(tx, session.key, run.id, outcome.messages)
            await self._enqueue_announcement(tx, finished, session, ended)
        log.info("run_finished", status=outcome.status.value, error=outcome.error)
        self._notify_outbox()

    async def _enqueue_announcement(self, tx, run: Run, session: Session, ended: float) -> None:
        announcement = announcement_for(run, session, ended_at=ended)
        await self.outbox.enqueue(
            tx,
            key=idempotency_key(run),
            run_id=run.id,
            channel_id=run.channel_id,
            payload_json=announcement.model_dump_json(),
            now=ended,
        )

    async def _interrupt_leftover_runs(self) -> None:
        """Runs that were queued or running when the last process died end as ``interrupted``, announced."""
        leftovers = await self.runs.list_live()
        for run in leftovers:
            session = await self.sessions.get(run.session_key)
            assert session is not None
            ended = self._clock()
            partial = partial_result(await self.transcripts.for_run(run.id))
            interrupted = replace(
                run, status=RunStatus.INTERRUPTED, ended_at=ended, error=INTERRUPTED_REASON, result_text=partial
            )
            async with self._db.transaction() as tx:
                if await self.runs.finish(
                    tx, run.id, RunStatus.INTERRUPTED, ended, result_text=partial, error=INTERRUPTED_REASON
                ):
                    await self._enqueue_announcement(tx, interrupted, session, ended)
            log.warning("run_interrupted", run_id=run.id, session_key=session.key, previous_status=run.status.value)
        if leftovers:
            self._notify_outbox()

    def _notify_outbox(self) -> None:
        for listener in self._outbox_listeners:
            listener()
