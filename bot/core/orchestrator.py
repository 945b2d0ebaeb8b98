"""The orchestrator: spawn → persist (queued) → lane → running → (waiting on children) → terminal, crash-safe.

Every state change is written to SQLite before anything relies on it. A terminal state and where its result
goes — a Discord announcement (outbox row) or an internal message to the requesting run (inbox row) — are
written in one transaction, so a crash can neither lose a result nor deliver it twice.

Runs execute in tasks created by the orchestrator's own supervisor task (never inside a caller's tool call),
so a child never inherits its parent's deadline or cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import aiosqlite
import structlog
from pydantic_ai import CancellationToken
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart

from bot.agents.models import ModelFactory, ResolvedModel, UnknownModelError
from bot.agents.runner import (
    INTERRUPTED_BEFORE,
    KILLED_BEFORE,
    NO_OUTPUT,
    RunOutcome,
    RunRequest,
    partial_result,
    run_agent,
)
from bot.config import Config
from bot.core import internal_context
from bot.core.announcements import (
    INTERRUPTED_REASON,
    Announcement,
    announcement_for,
    idempotency_key,
    status_line,
)
from bot.core.errors import SessionArchived, SpawnRefused, UserError
from bot.core.guild_settings import GuildSettings
from bot.core.limits import checked_text
from bot.core.prompts import subagent_context
from bot.core.session_queries import SessionQueries
from bot.core.session_toolset import Caller, ToolDeps, session_toolset
from bot.core.spawn_policy import SpawnArgs, SpawnContext, SpawnPlan, SpawnPolicy
from bot.core.stats import stats_line
from bot.core.threads import (
    ThreadPort,
    ThreadUnavailable,
    auto_archive_minutes,
    farewell_text,
    intro_text,
    thread_name,
)
from bot.core.timers import Timers
from bot.core.tool_policy import allowed_tools
from bot.records import LIVE_STATUSES, Binding, Origin, Run, RunKind, RunStatus, Session, Usage
from bot.text import quoted
from storage.audit import AuditRepository
from storage.bindings import BindingRepository
from storage.db import Database
from storage.guild_settings import GuildSettingsRepository
from storage.inbox import InboxRepository
from storage.outbox import OutboxRepository
from storage.runs import RunRepository
from storage.sessions import SessionRepository
from storage.transcripts import TranscriptRepository

SPAWN_NOTE = (
    "Auto-announce is push-based: do not poll with sessions_list or sessions_history. The result arrives as an "
    "internal completion event in this session. If your turn ends before all your children finish, you are woken "
    "with their results once every one has settled; give your final answer only after all expected completions "
    "arrive. If a completion arrives after your final answer, reply ONLY with NO_REPLY."
)

log = structlog.get_logger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class SpawnRequest:
    agent_id: str
    task: str
    origin: Origin
    model: str | None = None
    thinking: str | None = None
    thread: bool = False


@dataclass(frozen=True)
class SpawnAccepted:
    run_id: str
    session_key: str
    agent_id: str
    mode: str = "run"

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


def _origin_of(run: Run) -> Origin:
    """Work done on behalf of a run answers to the same person and place (the conversation key is only
    needed to name a main session, which a child never creates)."""
    return Origin(user_id=run.requester_user_id, channel_id=run.channel_id, guild_id=run.guild_id, conversation="")


@contextlib.contextmanager
def _skipped_if_bad(what: str, **row: object) -> Iterator[None]:
    """Start-up goes on past one row it cannot use (say, a corrupt deadline): the row is logged and skipped."""
    try:
        yield
    except Exception:
        log.exception("startup_row_skipped", what=what, **row)


def _total(before: Usage, turn: Usage) -> Usage:
    """Usage of a run over all its turns; a cost stays unknown once any turn's cost is unknown."""
    if before.requests == 0:
        return turn
    cost = before.cost + turn.cost if before.cost is not None and turn.cost is not None else None
    return Usage(
        input_tokens=before.input_tokens + turn.input_tokens,
        output_tokens=before.output_tokens + turn.output_tokens,
        requests=before.requests + turn.requests,
        tool_calls=before.tool_calls + turn.tool_calls,
        cost=cost,
    )


class Orchestrator:
    def __init__(
        self,
        config: Config,
        db: Database,
        models: ModelFactory,
        *,
        threads: ThreadPort | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._threads = threads
        self._db = db
        self._models = models
        self._clock = clock
        self.sessions = SessionRepository(db)
        self.runs = RunRepository(db)
        self.transcripts = TranscriptRepository(db)
        self.outbox = OutboxRepository(db)
        self.inbox = InboxRepository()
        self.bindings = BindingRepository(db)
        self.guild_settings = GuildSettings(config, db, GuildSettingsRepository(db), AuditRepository(), clock=clock)
        self.queries = SessionQueries(self.sessions, self.runs, self.transcripts, clock)
        self._policy = SpawnPolicy(config, models)
        self._timers = Timers()
        self._subagent_lane = asyncio.Semaphore(config.agents.defaults.subagents.max_concurrent)
        self._session_locks: dict[str, asyncio.Lock] = {}
        self._spawn_locks: dict[str, asyncio.Lock] = {}
        self._pending: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._cancellations: dict[str, CancellationToken] = {}
        self._supervisor: asyncio.Task[None] | None = None
        self._outbox_listeners: list[Callable[[], None]] = []
        self._background_tasks: set[asyncio.Future[None]] = set()
        self._changed = asyncio.Event()
        self._run_listeners: list[Callable[[str], None]] = []

    # -- lifecycle -------------------------------------------------------------------------------------------

    def add_run_listener(self, listener: Callable[[str], None]) -> None:
        """Called with a run id whenever that run changes (queued, started, a step, settled, killed)."""
        self._run_listeners.append(listener)

    def _run_changed(self, run_id: str) -> None:
        for listener in self._run_listeners:
            listener(run_id)

    def add_outbox_listener(self, listener: Callable[[], None]) -> None:
        """Called after every transaction that added outbox rows (the delivery worker wakes on it)."""
        self._outbox_listeners.append(listener)

    async def start(self) -> None:
        """Settle what a previous process left behind, rebuild timers, then start taking work."""
        await self._interrupt_leftover_runs()
        self._timers.start()
        for key, when in await self.sessions.archive_schedule():
            with _skipped_if_bad("archive_deadline", session_key=key, archive_at=when):
                self._timers.at(f"archive:{key}", when, self._archive, key)
        for binding in await self.bindings.all():
            with _skipped_if_bad("thread_binding", binding=repr(binding)):
                self._schedule_binding_deadline(binding)
            if binding.ends_with_run_id is not None:
                await self._end_run_bindings(binding.ends_with_run_id)
        self._supervisor = asyncio.create_task(self._supervise(), name="orchestrator-supervisor")

    async def close(self) -> None:
        """Stop every task; runs still live stay live in the database and are settled at next start."""
        self._timers.shutdown()
        tasks = [t for t in (self._supervisor, *self._tasks.values(), *self._background_tasks) if t is not None]
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

    # -- what users ask for ----------------------------------------------------------------------------------

    async def spawn(self, request: SpawnRequest) -> SpawnAccepted:
        """A user's spawn (slash command): a child of the conversation's main session, announced to it."""
        requester = self._main_session(request.origin, self._clock())
        args = SpawnArgs(
            task=request.task,
            agent_id=request.agent_id.strip(),
            model=request.model,
            thinking=request.thinking,
            thread=request.thread,
        )
        async with self._spawning(requester.key):
            context = await self._spawn_context(requester, None, member_id=request.origin.user_id)
            plan = await self._policy.checked_plan(args, context)
            return await self._create_child(plan, requester, None, request.origin)

    async def chat(self, request: ChatRequest) -> str:
        """Queue a main-agent turn in the conversation's session; the answer arrives through the outbox."""
        text = checked_text(request.text)
        agent_id = self._config.agents.default_agent
        model = self._resolve_model(self._config.agents.list[agent_id].model or self._config.agents.defaults.model)
        now = self._clock()
        session = self._main_session(request.origin, now)
        run = self._new_run(session, RunKind.CHAT, text, model.reference, None, 0, request.origin, None, now)
        await self._persist_and_queue(run, session)
        return run.id

    async def kill(self, run_id: str) -> list[Run]:
        """Stop a run and, cascading, every live run below it (deepest first). Killed runs announce nothing."""
        subtree = await self.runs.live_subtree(run_id)
        if not subtree:
            return []
        killed_ids = {run.id for run in subtree}
        now = self._clock()
        followups: list[Callable[[], None]] = []
        partials = {
            run.id: partial_result(await self.transcripts.for_run(run.id), stopped_by=KILLED_BEFORE) for run in subtree
        }
        async with self._db.transaction() as tx:
            for run in subtree:
                await self.runs.finish(tx, run.id, RunStatus.KILLED, now, result_text=partials[run.id], error="killed")
                if run.kind is RunKind.CHAT:
                    await self._keep_unread_results(tx, run.id, run.session_key, now)
            for run in subtree:
                if run.parent_run_id and run.parent_run_id not in killed_ids:
                    followups += await self._child_settled(tx, run.parent_run_id, now)
        for run in subtree:
            token = self._cancellations.get(run.id)
            if token is not None:
                token.cancel()
            log.info("run_killed", run_id=run.id, session_key=run.session_key)
            self._run_changed(run.id)
            followups.append(lambda run_id=run.id: self._background(self._end_run_bindings(run_id)))
        self._after_commit(followups)
        return subtree

    # -- what agents ask for (SessionControl) ----------------------------------------------------------------

    async def tool_spawn(self, caller: Caller, args: SpawnArgs) -> dict[str, Any]:
        requester = await self.sessions.get(caller.session.key)
        requester_run = await self.runs.get(caller.run_id)
        assert requester is not None and requester_run is not None
        try:
            async with self._spawning(requester.key):
                plan = await self._policy.checked_plan(args, await self._spawn_context(requester, requester_run))
                accepted = await self._create_child(plan, requester, requester_run, _origin_of(requester_run))
        except UserError as refused:
            log.info("spawn_refused", status=refused.status, error=str(refused))
            return {"status": refused.status, "error": str(refused)}
        return {
            "status": "accepted",
            "runId": accepted.run_id,
            "childSessionKey": accepted.session_key,
            "mode": plan.mode,
            "note": SPAWN_NOTE,
        }

    async def tool_agents_list(self, caller: Caller) -> dict[str, Any]:
        allowed = self._policy.allowed_targets(caller.session.agent_id)
        agents = self._config.agents.list
        ids = sorted(agents) if "*" in allowed else [a for a in allowed if a in agents]
        return {
            "requester": caller.session.agent_id,
            "allowAny": "*" in allowed,
            "agents": [{"id": a, "name": agents[a].name or a, "sandboxed": agents[a].sandboxed} for a in ids],
        }

    @staticmethod
    def _refuse_control(caller: Caller) -> dict[str, Any] | None:
        """Control scope is stored with the session at creation; a leaf controls nothing, whatever it is offered."""
        if caller.session.control_scope != "children":
            return {"status": "forbidden", "error": "Leaf subagents cannot control other sessions."}
        return None

    async def tool_sessions_list(self, caller: Caller) -> dict[str, Any]:
        if refused := self._refuse_control(caller):
            return refused
        rows = await self.queries.children(caller.session.key)
        return {"sessions": [row.as_dict(index) for index, row in enumerate(rows, start=1)]}

    async def tool_sessions_history(
        self, caller: Caller, session_key: str, limit: int, include_tools: bool
    ) -> dict[str, Any]:
        if refused := self._refuse_control(caller):
            return refused
        child = await self.queries.own_child(caller.session.key, session_key)
        if child is None:
            return {"status": "error", "error": f"Unknown session '{quoted(session_key)}': not one of your sub-agents."}
        return {"sessionKey": session_key, "messages": await self.queries.history(session_key, limit, include_tools)}

    async def tool_sessions_send(self, caller: Caller, session_key: str, message: str) -> dict[str, Any]:
        if refused := self._refuse_control(caller):
            return refused
        child = await self.queries.own_child(caller.session.key, session_key)
        if child is None:
            return {"status": "error", "error": f"Unknown session '{quoted(session_key)}': not one of your sub-agents."}
        latest = await self.runs.latest_for_session(session_key)
        if latest is not None and latest.status is RunStatus.WAITING_CHILDREN:
            return {"status": "error", "error": f"Session {session_key} is waiting on its children; message them."}
        if (
            latest is not None
            and latest.status in (RunStatus.QUEUED, RunStatus.RUNNING)
            and await self.steer(latest.id, message)
        ):
            return {"status": "accepted", "runId": latest.id, "delivered": "steered into the running run"}
        try:
            run_id = await self.follow_up(child, message, latest, parent_run_id=caller.run_id)
        except SessionArchived as archived:
            return {"status": "error", "error": str(archived)}
        return {"status": "accepted", "runId": run_id, "delivered": "started a follow-up run"}

    async def tool_subagents(
        self, caller: Caller, action: str, target: str | None, message: str | None
    ) -> dict[str, Any]:
        if refused := self._refuse_control(caller):
            return refused
        rows = await self.queries.children(caller.session.key)
        if action == "list":
            return {"subagents": [row.as_dict(index) for index, row in enumerate(rows, start=1)]}
        if not target:
            return {"status": "error", "error": f"Missing subagent id for {action}."}
        try:
            row = self.queries.resolve_target(rows, target)
        except LookupError as missing:
            return {"status": "error", "error": str(missing)}
        if row.run is None or row.run.status.is_terminal:
            return {"status": "error", "error": f"{row.label} is already finished."}
        if action == "kill":
            stopped = await self.kill(row.run.id)
            descendants = len(stopped) - 1
            suffix = f" (+ {descendants} descendant(s))" if descendants else ""
            return {"status": "ok", "result": f"killed {row.label}{suffix}."}
        if not message or not message.strip():
            return {"status": "error", "error": "steer needs a message."}
        if row.run.status is RunStatus.WAITING_CHILDREN:
            return {"status": "error", "error": f"{row.label} is waiting on its children; steer them instead."}
        if not await self.steer(row.run.id, message.strip()):
            return {"status": "error", "error": f"{row.label} is already finished."}
        return {"status": "ok", "result": f"steered {row.label} (run {row.run.id[:8]})."}

    # -- spawning --------------------------------------------------------------------------------------------

    def _spawning(self, requester_key: str) -> asyncio.Lock:
        """One spawn at a time per requester session, from counting its children to persisting the new one, so
        calls that arrive together (one model response's tool calls) cannot all pass a cap."""
        return self._spawn_locks.setdefault(requester_key, asyncio.Lock())

    async def _spawn_context(
        self, requester: Session, requester_run: Run | None, *, member_id: int | None = None
    ) -> SpawnContext:
        """Who is spawning: an agent's run, or (``member_id``) a person through a command."""
        by_user = member_id is not None
        return SpawnContext(
            requester=requester,
            requester_run=requester_run,
            active_children=0 if by_user else await self.runs.count_active_children(requester.key),
            by_user=by_user,
            thread_settings=(await self.guild_settings.effective(requester.guild_id)).thread_bindings,
            member_active=await self.runs.count_active_children(requester.key, member_id=member_id) if by_user else 0,
            member_limit=self._config.discord.max_active_runs_per_member,
        )

    async def _create_child(
        self, plan: SpawnPlan, requester: Session, requester_run: Run | None, origin: Origin
    ) -> SpawnAccepted:
        binding = None
        if plan.thread:
            binding = await self._open_thread(plan, origin)
            origin = replace(origin, channel_id=binding.thread_id, message_id=None)
        now = self._clock()
        child = Session(
            key=subagent_session_key(plan.agent_id),
            agent_id=plan.agent_id,
            kind="subagent",
            depth=plan.depth,
            role=plan.role,
            control_scope="none" if plan.role == "leaf" else "children",
            task=plan.task,
            requester_session_key=requester.key,
            label=plan.label,
            guild_id=origin.guild_id,
            channel_id=origin.channel_id,
            owner_user_id=origin.user_id,
            created_at=now,
            mode=plan.mode,
            cleanup=plan.cleanup,
            sandboxed=plan.sandboxed,
        )
        run = self._new_run(
            child,
            RunKind.SPAWN,
            plan.task,
            plan.model.reference,
            plan.thinking,
            plan.timeout_seconds,
            origin,
            requester_run.id if requester_run else None,
            now,
        )
        if binding is not None:
            binding = replace(
                binding,
                session_key=child.key,
                bound_by=origin.user_id,
                bound_at=now,
                last_activity_at=now,
                ends_with_run_id=run.id if plan.mode == "run" else None,
            )
        await self._persist_and_queue(run, requester if requester.kind == "main" else None, child, binding)
        if binding is not None:
            await self._introduce(binding, child.label or child.agent_id)
        return SpawnAccepted(run_id=run.id, session_key=child.key, agent_id=plan.agent_id, mode=plan.mode)

    # -- thread bindings -------------------------------------------------------------------------------------

    async def _open_thread(self, plan: SpawnPlan, origin: Origin) -> Binding:
        """Create the thread a spawned session will live in (a DM binds itself); not yet persisted."""
        settings = (await self.guild_settings.effective(origin.guild_id)).thread_bindings
        unbound = Binding(
            thread_id=origin.channel_id,
            parent_channel_id=None,
            guild_id=origin.guild_id,
            session_key="",
            bound_by=None,
            bound_at=0,
            last_activity_at=0,
            idle_seconds=settings.idle_hours * 3600,
            max_age_seconds=settings.max_age_hours * 3600,
        )
        if origin.guild_id is None:
            return unbound
        if self._threads is None:
            raise SpawnRefused("error", "Thread bindings are unavailable: no chat adapter can create threads.")
        try:
            ref = await self._threads.create_thread(
                origin.channel_id,
                thread_name(plan.label or plan.agent_id),
                auto_archive_minutes(unbound.idle_seconds, settings.auto_archive_minutes),
            )
        except ThreadUnavailable as unavailable:
            raise SpawnRefused(
                "error", f"Unable to create or bind a Discord thread for this subagent session: {unavailable}"
            ) from None
        return replace(unbound, thread_id=ref.thread_id, parent_channel_id=ref.parent_channel_id)

    async def _introduce(self, binding: Binding, label: str) -> None:
        self._schedule_binding_deadline(binding)
        if self._threads is None:
            return
        try:
            await self._threads.post(
                binding.thread_id, intro_text(label, binding.idle_seconds, binding.max_age_seconds)
            )
        except ThreadUnavailable as unavailable:
            log.warning("thread_intro_failed", thread_id=binding.thread_id, error=str(unavailable))

    async def reconcile_bindings(self) -> None:
        """Unbind threads that people deleted, locked or archived while the bot was down (no farewell)."""
        if self._threads is None:
            return
        for binding in await self.bindings.all():
            if binding.guild_id is not None and await self._threads.is_closed(binding.thread_id) is True:
                await self.unbind(binding.thread_id)

    async def bind(self, binding: Binding) -> None:
        """Create or replace a binding, and (re)schedule its deadline. A bound session is not archived under
        its thread: any archive deadline it had is cleared."""
        async with self._db.transaction() as tx:
            await self.bindings.add(tx, binding)
            await self.sessions.set_archive_at(tx, binding.session_key, None)
        self._timers.cancel(f"archive:{binding.session_key}")
        self._schedule_binding_deadline(binding)
        log.info("thread_bound", thread_id=binding.thread_id, session_key=binding.session_key)

    async def thread_message(self, thread_id: int, text: str, origin: Origin) -> bool:
        """A person wrote in a thread: if it is bound, the message goes to its session (no mention needed) —
        steered into the running run, or as a new turn. Returns whether the thread was bound."""
        binding = await self.bindings.get(thread_id)
        if binding is None:
            return False
        message = checked_text(text)
        now = self._clock()
        await self.bindings.touch(thread_id, now)
        self._schedule_binding_deadline(replace(binding, last_activity_at=now))
        session = await self.sessions.get(binding.session_key)
        latest = await self.runs.latest_for_session(binding.session_key)
        live = latest is not None and not latest.status.is_terminal
        if not (live and await self.steer(latest.id, message)):
            await self.follow_up(session, message, latest, origin=origin)
        return True

    async def unbind(self, thread_id: int, *, farewell: str | None = None) -> bool:
        """End a binding (the thread itself is left alone); ``farewell`` is posted into it when given. A
        session left with no thread is archived in due course, like any other that has finished."""
        removed = await self.bindings.remove(thread_id)
        self._timers.cancel(f"binding:{thread_id}")
        if removed is None:
            return False
        log.info("thread_unbound", thread_id=thread_id, farewell=farewell is not None)
        if farewell and self._threads is not None:
            with contextlib.suppress(ThreadUnavailable):
                await self._threads.post(thread_id, farewell)
        await self._schedule_archive_after_unbinding(removed.session_key)
        return True

    async def _end_run_bindings(self, run_id: str) -> None:
        """A run-mode spawn's thread binding ends with its run: once the run's announcement is delivered (so the
        result lands in the thread first), or at once when there is nothing left to deliver."""
        bindings = await self.bindings.ending_with(run_id)
        if not bindings:
            return
        run = await self.runs.get(run_id)
        if run is None or not run.status.is_terminal:
            return
        if any(row.status == "pending" and row.notice is None for row in await self.outbox.for_run(run_id)):
            return
        for binding in bindings:
            await self.unbind(binding.thread_id, farewell=farewell_text("run-ended", 0))

    def _schedule_binding_deadline(self, binding: Binding) -> None:
        deadline = binding.deadline()
        if deadline is None:
            self._timers.cancel(f"binding:{binding.thread_id}")
        else:
            self._timers.at(f"binding:{binding.thread_id}", deadline[0], self._binding_due, binding.thread_id)

    async def _binding_due(self, thread_id: int) -> None:
        binding = await self.bindings.get(thread_id)
        deadline = binding.deadline() if binding else None
        if binding is None or deadline is None:
            return
        when, reason = deadline
        if when > self._clock():
            self._schedule_binding_deadline(binding)  # activity moved it meanwhile
            return
        seconds = binding.idle_seconds if reason == "idle" else binding.max_age_seconds
        await self.unbind(thread_id, farewell=farewell_text(reason, seconds))
        settings = (await self.guild_settings.effective(binding.guild_id)).thread_bindings
        if settings.archive_on_expiry and binding.guild_id is not None and self._threads is not None:
            try:
                await self._threads.archive(thread_id)
            except ThreadUnavailable as unavailable:
                log.warning("thread_archive_failed", thread_id=thread_id, error=str(unavailable))

    @staticmethod
    def _new_run(
        session: Session,
        kind: RunKind,
        task: str,
        model: str,
        thinking: str | None,
        timeout_seconds: int,
        origin: Origin,
        parent_run_id: str | None,
        now: float,
    ) -> Run:
        return Run(
            id=uuid.uuid4().hex,
            session_key=session.key,
            parent_run_id=parent_run_id,
            kind=kind,
            status=RunStatus.QUEUED,
            task=task,
            model=model,
            thinking=thinking,
            timeout_seconds=timeout_seconds,
            requester_user_id=origin.user_id,
            guild_id=origin.guild_id,
            channel_id=origin.channel_id,
            source_message_id=origin.message_id,
            created_at=now,
        )

    async def _persist_and_queue(
        self, run: Run, main: Session | None, child: Session | None = None, binding: Binding | None = None
    ) -> None:
        """One transaction: the conversation's main session (if new), a new child session, the queued run and
        the child's thread binding."""
        async with self._db.transaction() as tx:
            if main is not None:
                await self.sessions.insert(tx, main, if_missing=True)
            if child is not None:
                await self.sessions.insert(tx, child)
            elif (archived := await self.sessions.archived_at(tx, run.session_key)) is not None:
                raise SessionArchived(run.session_key, archived, self._clock())
            await self.sessions.set_archive_at(tx, run.session_key, None)
            await self.runs.insert(tx, run)
            if binding is not None:
                await self.bindings.add(tx, binding)
        self._timers.cancel(f"archive:{run.session_key}")
        log.info(
            "run_queued",
            run_id=run.id,
            session_key=run.session_key,
            kind=run.kind.value,
            parent_run_id=run.parent_run_id,
        )
        self._pending.put_nowait(("start", run.id))
        self._run_changed(run.id)

    def _resolve_model(self, reference: str) -> ResolvedModel:
        try:
            return self._models.resolve(reference)
        except UnknownModelError as exc:
            raise UserError(str(exc)) from None

    def _main_session(self, origin: Origin, now: float) -> Session:
        agent_id = self._config.agents.default_agent
        return Session(
            key=main_session_key(agent_id, origin.conversation),
            agent_id=agent_id,
            kind="main",
            depth=0,
            role="main",
            control_scope="children",
            requester_session_key=None,
            label=None,
            guild_id=origin.guild_id,
            channel_id=origin.channel_id,
            owner_user_id=None,
            created_at=now,
            sandboxed=self._config.agents.list[agent_id].sandboxed,
        )

    async def steer(self, run_id: str, message: str) -> bool:
        """Queue a message for a live run; it reaches the model at the run's next request (``AgentRun.enqueue``),
        or, for a run waiting on its children, with their results. False if the run ended meanwhile."""
        async with self._db.transaction() as tx:
            steered = await self.inbox.add_steer(tx, run_id=run_id, content=message, now=self._clock())
        log.info("run_steered" if steered else "steer_too_late", run_id=run_id)
        return steered

    async def follow_up(
        self,
        session: Session,
        message: str,
        previous: Run | None,
        parent_run_id: str | None = None,
        origin: Origin | None = None,
    ) -> str:
        """Start a new run in an existing sub-agent session (it announces again when it ends), answering to
        ``origin`` (default: whoever the previous run answered to). An archived session takes no more runs."""
        if previous is None:
            raise UserError(f"Session {session.key} has no earlier run to follow up.")
        run = self._new_run(
            session,
            RunKind.FOLLOWUP,
            message,
            previous.model,
            previous.thinking,
            previous.timeout_seconds,
            origin or _origin_of(previous),
            parent_run_id,
            self._clock(),
        )
        await self._persist_and_queue(run, None)
        return run.id

    async def wait_for(self, check: Callable[[], Awaitable[T | None]], timeout: float) -> T | None:
        """Wait until ``check()`` returns something (re-checked whenever a run progresses), or ``None`` at timeout."""
        deadline = self._clock() + timeout
        while True:
            changed = self._changed
            found = await check()
            remaining = deadline - self._clock()
            if found is not None or remaining <= 0:
                return found
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(changed.wait(), remaining)

    def _progressed(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    @property
    def default_agent(self) -> str:
        return self._config.agents.default_agent

    @property
    def threads(self) -> ThreadPort:
        if self._threads is None:
            raise UserError("Thread bindings are unavailable: no chat adapter can create threads.")
        return self._threads

    # -- execution -------------------------------------------------------------------------------------------

    async def _supervise(self) -> None:
        while True:
            action, run_id = await self._pending.get()
            task = asyncio.create_task(self._execute(run_id, wake=action == "wake"), name=f"run-{run_id[:8]}")
            self._tasks[run_id] = task
            task.add_done_callback(lambda _t, rid=run_id: self._tasks.pop(rid, None))

    def _lane(self, run: Run) -> asyncio.Semaphore | asyncio.Lock:
        """Sub-agent runs share the bounded lane; main-agent turns queue one at a time per session."""
        if run.kind is RunKind.CHAT:
            return self._session_locks.setdefault(run.session_key, asyncio.Lock())
        return self._subagent_lane

    async def _execute(self, run_id: str, *, wake: bool) -> None:
        run = await self.runs.get(run_id)
        expected = RunStatus.RUNNING if wake else RunStatus.QUEUED
        if run is None or run.status is not expected:
            return
        session = await self.sessions.get(run.session_key)
        assert session is not None, f"run {run_id} has no session"
        with structlog.contextvars.bound_contextvars(
            run_id=run.id, session_key=session.key, agent_id=session.agent_id, depth=session.depth
        ):
            async with self._lane(run):
                if wake:
                    prompt = await self._take_inbox(run.id, wake=True)
                    if prompt is None:
                        log.warning("wake_without_messages")
                        await self._settle(
                            run,
                            session,
                            RunOutcome(RunStatus.COMPLETED, run.result_text or NO_OUTPUT, None, run.usage, []),
                        )
                else:
                    if not await self.runs.mark_running(run.id, self._clock()):
                        return
                    prompt = run.task
                    log.info("run_started", model=run.model)
                    self._run_changed(run.id)
                while prompt is not None:
                    outcome = await self._run_turn(run, session, prompt)
                    prompt = await self._settle(run, session, outcome)
                    self._run_changed(run.id)

    async def _run_turn(self, run: Run, session: Session, prompt: str) -> RunOutcome:
        agent = self._config.agents.list[session.agent_id]
        system_prompt = agent.system_prompt or self._config.agents.defaults.system_prompt
        if session.kind == "subagent":
            system_prompt += "\n\n" + subagent_context(session, self._config.agents.defaults.subagents.max_spawn_depth)
        toolset = session_toolset(allowed_tools(session.role, self._config.tools.subagents.tools))

        before = (await self.runs.get(run.id) or run).usage

        async def persist(messages: Sequence[ModelMessage], turn: Usage) -> None:
            async with self._db.transaction() as tx:
                await self.transcripts.append(tx, session.key, run.id, messages)
                await self.runs.record_usage(tx, run.id, _total(before, turn))
            self._progressed()
            self._run_changed(run.id)

        async def drain() -> list[str]:
            text = await self._take_inbox(run.id, wake=False)
            return [text] if text else []

        request = RunRequest(
            prompt=prompt,
            system_prompt=system_prompt,
            model=self._models.resolve(run.model),
            history=await self.transcripts.history(session.key),
            thinking=run.thinking,
            timeout_seconds=run.timeout_seconds,
            toolsets=[toolset] if toolset else [],
            deps=ToolDeps(control=self, caller=Caller(session=session, run_id=run.id)),
        )
        token = self._cancellations.setdefault(run.id, CancellationToken())
        try:
            # A main turn is not redirected by results that arrive meanwhile (they are already posted for
            # people); they join its session's history when it ends. A sub-agent reads its inbox at every step.
            inbox = drain if session.kind == "subagent" else None
            outcome = await run_agent(request, on_step=persist, drain=inbox, cancellation=token)
        finally:
            self._cancellations.pop(run.id, None)
        return replace(outcome, usage=_total(before, outcome.usage))

    async def _take_inbox(self, run_id: str, *, wake: bool) -> str | None:
        """Consume the run's pending inbox as one prompt (steers as they are, completions in one internal block)."""
        async with self._db.transaction() as tx:
            items = await self.inbox.take_pending(tx, run_id, self._clock())
        if not items:
            return None
        steers = [content for source, content in items if source is None]
        events = [content for source, content in items if source is not None]
        parts = steers + ([internal_context.wrap(events, wake=wake)] if events else [])
        return "\n\n".join(parts)

    async def _settle(self, run: Run, session: Session, outcome: RunOutcome) -> str | None:
        """After a turn (``outcome.usage`` is the run's total): wait for children, take another turn (returns
        its prompt), or end the run."""
        now = self._clock()
        followups: list[Callable[[], None]] = []
        usage = outcome.usage
        async with self._db.transaction() as tx:
            current = await self.runs.get(run.id, tx)
            if current is None:
                return None
            await self.runs.record_usage(tx, run.id, usage)
            if session.kind == "main":
                await self._keep_unread_results(tx, run.id, session.key, now)
            if current.status is not RunStatus.RUNNING:
                return None  # killed meanwhile: its spending is counted, and it announces nothing
            orchestrating = outcome.status is RunStatus.COMPLETED and session.kind == "subagent"
            if orchestrating and await self.runs.count_unsettled_children(run.id, tx):
                await self.runs.set_status(
                    tx, run.id, RunStatus.RUNNING, RunStatus.WAITING_CHILDREN, result_text=outcome.result_text
                )
                log.info("run_waiting_on_children")
                return None
            wake = orchestrating and await self.inbox.count_pending(tx, run.id) > 0
            if not wake:
                await self.runs.finish(
                    tx, run.id, outcome.status, now, result_text=outcome.result_text, error=outcome.error
                )
                finished = replace(
                    current,
                    status=outcome.status,
                    ended_at=now,
                    result_text=outcome.result_text,
                    error=outcome.error,
                    usage=usage,
                )
                followups += await self._route(tx, finished, session, now)
        if wake:
            return await self._take_inbox(run.id, wake=True)
        log.info("run_finished", status=outcome.status.value, error=outcome.error)
        self._after_commit(followups)
        return None

    # -- where results go ------------------------------------------------------------------------------------

    async def _route(
        self, tx: aiosqlite.Connection, run: Run, session: Session, now: float
    ) -> list[Callable[[], None]]:
        """Deliver a finished run's result to its direct requester, exactly once (inside the caller's transaction).

        A top-level requester gets a Discord announcement; a live nested requester gets an inbox message; a
        requester that is gone passes it to its own requester; a killed requester drops it.
        """
        followups: list[Callable[[], None]] = []
        deadline = await self._mark_archive_deadline(tx, session, now)
        if deadline is not None:
            followups.append(lambda: self._timers.at(f"archive:{session.key}", deadline, self._archive, session.key))
        followups.append(lambda: self._background(self._end_run_bindings(run.id)))
        silent = run.status is RunStatus.COMPLETED and internal_context.is_silent(run.result_text)
        target_id = run.parent_run_id
        while True:
            target = await self.runs.get(target_id, tx) if target_id else None
            target_session = await self.sessions.get(target.session_key) if target else None
            if target is None or target_session is None or target_session.kind == "main":
                if not silent:
                    requester = await self.sessions.get(session.requester_session_key or "")
                    announcement = await self._enqueue_announcement(tx, run, session, requester, now)
                    if announcement.kind == "completion":
                        await self._tell_main_agent(tx, run, session, requester, now)
                    followups.append(self._notify_outbox)
                elif session.cleanup == "delete":
                    followups.append(lambda: self._background(self._archive(session.key)))
                return followups
            if target.status is RunStatus.KILLED:
                log.info("completion_dropped", reason="requester killed", requester_run_id=target.id)
                return followups
            if target.status in LIVE_STATUSES and target_session.archived_at is None:
                if not silent:
                    await self.inbox.add(
                        tx,
                        run_id=target.id,
                        source_run_id=run.id,
                        content=self._completion_event(run, session, now),
                        now=now,
                    )
                if session.cleanup == "delete":
                    followups.append(lambda: self._background(self._archive(session.key)))
                if target.status is RunStatus.WAITING_CHILDREN:
                    followups += await self._child_settled(tx, target.id, now)
                return followups
            target_id = target.parent_run_id

    async def _child_settled(
        self, tx: aiosqlite.Connection, parent_run_id: str, now: float
    ) -> list[Callable[[], None]]:
        """A child of ``parent_run_id`` settled: if the parent waits and nothing is left, wake it or end it."""
        parent = await self.runs.get(parent_run_id, tx)
        if parent is None or parent.status is not RunStatus.WAITING_CHILDREN:
            return []
        if await self.runs.count_unsettled_children(parent.id, tx):
            return []
        if await self.inbox.count_pending(tx, parent.id):
            await self.runs.set_status(tx, parent.id, RunStatus.WAITING_CHILDREN, RunStatus.RUNNING)
            log.info("run_woken", run_id=parent.id)
            return [lambda: self._pending.put_nowait(("wake", parent.id)), lambda: self._run_changed(parent.id)]
        parent_session = await self.sessions.get(parent.session_key)
        assert parent_session is not None
        await self.runs.finish(tx, parent.id, RunStatus.COMPLETED, now)
        finished = replace(parent, status=RunStatus.COMPLETED, ended_at=now)
        return [lambda: self._run_changed(parent.id), *await self._route(tx, finished, parent_session, now)]

    def _completion_event(self, run: Run, session: Session, now: float, *, posted: bool = False) -> str:
        started = run.started_at if run.started_at is not None else now
        return internal_context.completion_event(
            internal_context.ChildCompletion(
                session_key=session.key,
                task_label=session.label or run.task[:110],
                status_line=status_line(run.status, run.error),
                result=run.result_text or "(no output)",
                stats_line=stats_line(now - started, run.usage),
                posted=posted,
            )
        )

    async def _tell_main_agent(
        self, tx: aiosqlite.Connection, run: Run, session: Session, requester: Session | None, now: float
    ) -> None:
        """A sub-agent's result that was posted for people also becomes context of the conversation's main
        agent, for its next turn, without starting one: it joins the main session's history now, or — while a
        main turn is in progress, so as not to split that turn's messages — as that turn ends. (Replies in a
        focused thread are that thread's conversation, not results: they stay out.)"""
        if session.kind != "subagent" or requester is None or requester.kind != "main":
            return
        event = self._completion_event(run, session, now, posted=True)
        turn = await self.runs.running_in(tx, requester.key)
        if turn is not None:
            await self.inbox.add(tx, run_id=turn.id, source_run_id=run.id, content=event, now=now)
        else:  # a queued turn loads the history when it starts, so it sees this
            await self._remember(tx, requester.key, [event])

    async def _keep_unread_results(self, tx: aiosqlite.Connection, run_id: str, session_key: str, now: float) -> None:
        """Results that arrived while a main turn ran are added to the session's history after that turn, however
        it ends (settled, killed, or interrupted by a restart)."""
        events = [content for source, content in await self.inbox.take_pending(tx, run_id, now) if source]
        if events:
            await self._remember(tx, session_key, events)

    async def _remember(self, tx: aiosqlite.Connection, session_key: str, events: list[str]) -> None:
        context = ModelRequest(parts=[UserPromptPart(internal_context.wrap(events))])
        await self.transcripts.append(tx, session_key, None, [context])

    async def _enqueue_announcement(
        self, tx: aiosqlite.Connection, run: Run, session: Session, requester: Session | None, ended: float
    ) -> Announcement:
        """The announcement, with the conversation's own channel to fall back on when the run answers in a
        thread (should the thread be gone by then)."""
        announcement = announcement_for(run, session, ended_at=ended)
        if requester is not None and requester.channel_id != run.channel_id:
            announcement.fallback_channel_id = requester.channel_id
        await self.outbox.enqueue(
            tx,
            key=idempotency_key(run),
            run_id=run.id,
            channel_id=run.channel_id,
            payload_json=announcement.model_dump_json(),
            now=ended,
        )
        return announcement

    def _after_commit(self, followups: list[Callable[[], None]]) -> None:
        for followup in followups:
            followup()
        self._progressed()

    def _notify_outbox(self) -> None:
        for listener in self._outbox_listeners:
            listener()

    def _background(self, work: Awaitable[None]) -> None:
        """Follow-up work after a commit that nobody awaits; kept referenced, and its failure logged."""
        task = asyncio.ensure_future(work)
        self._background_tasks.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Future[None]) -> None:
        self._background_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background_work_failed", exc_info=task.exception())

    # -- archiving -------------------------------------------------------------------------------------------

    async def _mark_archive_deadline(self, tx: aiosqlite.Connection, session: Session, now: float) -> float | None:
        """``archive_after_minutes`` after a sub-agent session's run ends (``cleanup: delete`` goes sooner); a
        session bound to a thread gets its deadline only when the binding ends."""
        minutes = self._config.agents.defaults.subagents.archive_after_minutes
        if session.kind != "subagent" or session.cleanup != "keep" or minutes <= 0:
            return None
        if await self.bindings.for_session(session.key):
            return None
        deadline = now + minutes * 60
        await self.sessions.set_archive_at(tx, session.key, deadline)
        return deadline

    async def _schedule_archive_after_unbinding(self, session_key: str) -> None:
        session = await self.sessions.get(session_key)
        latest = await self.runs.latest_for_session(session_key)
        if session is None or latest is None or not latest.status.is_terminal or session.archived_at is not None:
            return
        if session.cleanup == "delete":
            await self._archive(session_key)
            return
        async with self._db.transaction() as tx:
            deadline = await self._mark_archive_deadline(tx, session, self._clock())
        if deadline is not None:
            self._timers.at(f"archive:{session_key}", deadline, self._archive, session_key)

    async def _archive(self, session_key: str) -> None:
        """Close a finished sub-agent session for good; never one that is live or still bound to a thread."""
        session = await self.sessions.get(session_key)
        if session is None or session.kind != "subagent" or await self.bindings.for_session(session_key):
            return
        latest = await self.runs.latest_for_session(session_key)
        if latest is not None and not latest.status.is_terminal:
            return
        if await self.sessions.archive(session_key, self._clock()):
            log.info("session_archived", session_key=session_key)

    async def announcement_delivered(self, run_id: str) -> None:
        """The delivery worker is done with a run's announcement (posted it, or gave up and told the requester):
        a run-mode thread's binding ends now, and then a ``cleanup: delete`` session is archived."""
        run = await self.runs.get(run_id)
        session = await self.sessions.get(run.session_key) if run else None
        if session is None:
            return
        await self._end_run_bindings(run_id)
        if session.cleanup == "delete":
            await self._archive(session.key)

    # -- start-up --------------------------------------------------------------------------------------------

    async def _interrupt_leftover_runs(self) -> None:
        """Runs live when the last process died end as ``interrupted``; the topmost of each chain is announced."""
        leftovers = await self.runs.list_live()
        live_ids = {run.id for run in leftovers}
        followups: list[Callable[[], None]] = []
        for run in leftovers:
            session = await self.sessions.get(run.session_key)
            assert session is not None
            now = self._clock()
            partial = partial_result(await self.transcripts.for_run(run.id), stopped_by=INTERRUPTED_BEFORE)
            async with self._db.transaction() as tx:
                if not await self.runs.finish(
                    tx, run.id, RunStatus.INTERRUPTED, now, result_text=partial, error=INTERRUPTED_REASON
                ):
                    continue
                if run.kind is RunKind.CHAT:
                    await self._keep_unread_results(tx, run.id, run.session_key, now)
                if run.parent_run_id not in live_ids:
                    interrupted = replace(
                        run, status=RunStatus.INTERRUPTED, ended_at=now, error=INTERRUPTED_REASON, result_text=partial
                    )
                    followups += await self._route(tx, interrupted, session, now)
            log.warning("run_interrupted", run_id=run.id, session_key=session.key, previous_status=run.status.value)
        self._after_commit(followups)
