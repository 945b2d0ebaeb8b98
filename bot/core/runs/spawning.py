"""Spawning: new sessions and runs — a person's spawn, an agent's spawn, a main-agent turn, a follow-up — each
persisted with its session, thread binding and queued run in one transaction, then queued for execution. Whether a
spawn may happen, and with what, is :mod:`bot.core.runs.spawn_policy`'s to decide."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

import structlog

from bot.agents.models import ModelFactory, ResolvedModel, UnknownModelError
from bot.core.attachments import check_readable, redacted
from bot.core.context import CoreContext
from bot.core.errors import CallerEnded, EphemeralSession, SessionArchived, UserError
from bot.core.guild_settings import GuildSettings
from bot.core.limits import checked_text
from bot.core.runs.ports import Admission, Launcher, SpawnGuard, ThreadOpener
from bot.core.runs.queue_caps import check_member, member_key
from bot.core.runs.requests import (
    ChatRequest,
    SpawnAccepted,
    SpawnRequest,
    main_session_key,
    new_run,
    origin_of,
    subagent_session_key,
)
from bot.core.runs.spawn_policy import SpawnArgs, SpawnContext, SpawnPlan, SpawnPolicy
from bot.i18n import Words
from bot.keyed_locks import KeyedLocks
from bot.records import (
    Attachment,
    Binding,
    ControlScope,
    Origin,
    Run,
    RunKind,
    Session,
    SessionKind,
    SessionMode,
    SessionRole,
    SpawnSite,
)
from storage.db import Connection
from storage.usage import Payer

log = structlog.get_logger(__name__)


class Spawning:
    """Persists new sessions and runs and hands each run to the launcher."""

    def __init__(
        self,
        ctx: CoreContext,
        models: ModelFactory,
        policy: SpawnPolicy,
        guild_settings: GuildSettings,
        threads: ThreadOpener,
        launcher: Launcher,
        budgets: Admission,
        guard: SpawnGuard,
    ) -> None:
        self._ctx = ctx
        self._models = models
        self._policy = policy
        self._envelopes = guard
        self._guild_settings = guild_settings
        self._threads = threads
        self._launcher = launcher
        self._budgets = budgets
        # one spawn at a time per requester session, from counting its children to persisting the new one, so calls
        # that arrive together (one model response's tool calls) cannot all pass a cap
        self._spawn_locks: KeyedLocks[str] = KeyedLocks()

    async def spawn(self, request: SpawnRequest) -> SpawnAccepted:
        """A user's spawn (slash command): a child of the conversation's main session, announced to it. Nothing is
        built before the spawn lock is held, taken with no context manager's frames: spawns that arrive together
        (10,000 at once) wait holding little, and each costs the loop little until its turn."""
        key = member_key(request.origin.guild_id, request.origin.user_id)  # their cap's scope
        await self._spawn_locks.acquire(key)
        try:
            requester = self.main_session(request.origin, self._ctx.clock())
            args = SpawnArgs(
                task=request.task,
                agent_id=request.agent_id.strip(),
                model=request.model,
                thinking=request.thinking,
                thread=request.thread,
                runtime=request.runtime,
            )
            context = await self._spawn_context(requester, None, request.origin.user_id, by_user=True)
            plan = await self._policy.checked_plan(args, context)
            check_readable(self._ctx.config, plan.model.reference, request.attachments)
            return await self._create_child(plan, requester, None, request.origin, request.attachments)
        finally:
            self._spawn_locks.release(key)

    async def spawn_for(self, requester: Session, requester_run: Run, args: SpawnArgs) -> SpawnAccepted:
        """An agent's spawn (``sessions_spawn``): a child of the calling run, answering to its requester, inside
        the requester's policy envelope."""
        member = requester_run.requester_user_id if requester.depth == 0 else None  # a main agent spawns for them
        keys = (member_key(requester.guild_id, member), requester.key) if member else (requester.key,)
        async with self._spawn_locks.hold(*keys):  # the member's first, as their own spawns take it
            plan = await self._policy.checked_plan(args, await self._spawn_context(requester, requester_run, member))
            await self._envelopes.vet_spawn(requester, requester_run, args, plan)
            return await self._create_child(plan, requester, requester_run, origin_of(requester_run))

    async def chat(self, request: ChatRequest) -> str:
        """Queue a main-agent turn in the conversation's session; the answer arrives through the outbox.

        The turn answers the person's message (a turn that answers none is a voice turn, which settlement starts)."""
        assert request.origin.message_id is not None, "a chat turn answers a message"
        text = checked_text(request.text)
        agent_id = self._ctx.config.agents.default_agent
        now = self._ctx.clock()
        session = self.main_session(request.origin, now)
        model = await self.main_model(session.key, agent_id)
        check_readable(self._ctx.config, model, request.attachments)
        run = new_run(session, RunKind.CHAT, text, model, None, 0, request.origin, None, now)
        await self.persist_and_queue(run, session, attachments=request.attachments)
        return run.id

    async def main_model(self, session_key: str, agent_id: str) -> str:
        """The model of a main session's next turn: the one ``model_switch`` chose, else its agent's."""
        agents = self._ctx.config.agents
        chosen = await self._switched_model(session_key) or agents.list[agent_id].model or agents.defaults.model
        return self._resolve_model(chosen).reference

    async def _switched_model(self, session_key: str) -> str | None:
        """The model ``model_switch`` chose for this conversation, while the config still names it."""
        stored = await self._ctx.repos.sessions.get(session_key)
        if stored is None or stored.model is None:
            return None
        if stored.model not in self._ctx.config.configured_models():
            log.warning("switched_model_not_configured", session_key=session_key, model=stored.model)
            return None
        return stored.model

    async def follow_up(
        self,
        session: Session,
        message: str,
        previous: Run | None,
        parent_run_id: str | None = None,
        origin: Origin | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> str:
        """Start a new run in an existing sub-agent session; it announces again when it ends. It answers to
        ``origin`` (default: the session's owner, where the previous run answered). An archived session takes no
        more runs, and none while the sub-agent queue is full."""
        if session.delegation is not None:
            raise EphemeralSession(session.key)
        if previous is None:
            raise UserError(Words("refused-no-earlier-run", {"session": session.key}))
        check_readable(self._ctx.config, previous.model, attachments)
        answering = origin or replace(origin_of(previous), user_id=session.owner_user_id)
        await self.check_queue(answering.guild_id, answering.user_id)
        settings = (previous.model, previous.thinking, previous.timeout_seconds)
        run = new_run(session, RunKind.FOLLOWUP, message, *settings, answering, parent_run_id, self._ctx.clock())
        await self.persist_and_queue(run, None, attachments=attachments)
        return run.id

    async def check_queue(self, guild_id: int | None, member: int | None = None) -> None:
        """The caps (:class:`SpawnRefused`) on a run of ``guild_id`` queued outside a spawn's policy: ``member``'s
        live sub-agents (the person a follow-up answers to), then the queue's."""
        if member is not None and (limit := self._ctx.config.discord.max_active_runs_per_member):
            check_member(limit, await self._ctx.repos.runs.count_member_active(guild_id, member), guild_id, member)
        self._policy.check_queue(await self._ctx.repos.runs.lane_queued(guild_id))

    async def _spawn_context(
        self, requester: Session, requester_run: Run | None, member_id: int | None, *, by_user: bool = False
    ) -> SpawnContext:
        """Who is spawning: a person by command (``by_user``), or an agent's run (a main agent's for ``member_id``)."""
        runs, member_limit = self._ctx.repos.runs, self._ctx.config.discord.max_active_runs_per_member
        counted = member_limit > 0  # 0: no cap, no scan
        return SpawnContext(
            requester=requester,
            requester_run=requester_run,
            active_children=0 if by_user else await runs.count_active_children(requester.key),
            by_user=by_user,
            thread_settings=(await self._guild_settings.effective(requester.guild_id)).thread_bindings,
            member_active=await runs.count_member_active(requester.guild_id, member_id) if member_id and counted else 0,
            member_limit=member_limit,
            queued=await runs.lane_queued(requester.guild_id),
        )

    async def _create_child(
        self, plan: SpawnPlan, requester: Session, run_of: Run | None, origin: Origin, files: Sequence[Attachment] = ()
    ) -> SpawnAccepted:
        binding = None
        if plan.thread:
            payer = Payer(origin.guild_id, origin.user_id, plan.agent_id)
            await self._budgets.check(payer, top_level=run_of is None)  # before a thread is opened for it
            binding = await self._threads.open_thread(plan, origin)
            origin = replace(origin, channel_id=binding.thread_id, message_id=None)
        now = self._ctx.clock()
        child = Session(
            key=subagent_session_key(plan.agent_id),
            agent_id=plan.agent_id,
            kind=SessionKind.SUBAGENT,
            depth=plan.depth,
            role=plan.role,
            control_scope=ControlScope.NONE if plan.role == SessionRole.LEAF else ControlScope.CHILDREN,
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
            spawn_site=SpawnSite.TOOL if run_of is not None else SpawnSite.SLASH,
            acp_agent=plan.acp_agent,
        )
        settings = (plan.model.reference, plan.thinking, plan.timeout_seconds)
        run = new_run(child, RunKind.SPAWN, plan.task, *settings, origin, run_of.id if run_of else None, now)
        if binding is not None:
            binding = replace(
                binding,
                session_key=child.key,
                bound_by=origin.user_id,
                bound_at=now,
                last_activity_at=now,
                ends_with_run_id=run.id if plan.mode == SessionMode.RUN else None,
            )
        async with self._threads.archived_if_refused(binding):
            main = requester if requester.kind == SessionKind.MAIN else None
            await self.persist_and_queue(run, main, child, binding, attachments=files)
        if binding is not None:
            await self._threads.introduce(binding, child.label or child.agent_id)
        return SpawnAccepted(run.id, child.key, plan.acp_agent or plan.agent_id, plan.mode, plan.warning)

    async def persist_and_queue(
        self,
        run: Run,
        main: Session | None,
        child: Session | None = None,
        binding: Binding | None = None,
        *,
        also: Callable[[Connection], Awaitable[None]] | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> None:
        """One transaction: the conversation's main session (if new), a new child session, the queued run (admitted
        by the budgets, with its lane place if one is free), the child's binding, and what the caller records with them
        (``also``: a delegate's task); or nothing, when the run's parent has ended meanwhile or a budget refuses it."""
        sessions = self._ctx.repos.sessions
        async with self._ctx.repos.db.transaction() as tx:
            if main is not None:
                await sessions.insert(tx, main, if_missing=True)
            if child is not None:
                await sessions.insert(tx, child)  # new: no archive time
            elif (archived := await sessions.archived_at(tx, run.session_key)) is not None:
                raise SessionArchived(run.session_key, archived, self._ctx.clock())
            else:
                await sessions.set_archive_at(tx, run.session_key, None)
            if run.parent_run_id and not await self._ctx.repos.runs.is_live(tx, run.parent_run_id):
                raise CallerEnded(run.parent_run_id)  # killed while this launch waited for the write lock
            await self._budgets.admit(tx, run)
            await self._ctx.repos.runs.insert(tx, run)
            placed = await self._launcher.place(tx, run, delegated=child is not None and child.delegation is not None)
            await self._ctx.repos.run_attachments.add(tx, run.id, redacted(self._ctx.redact, attachments))
            if binding is not None:
                await self._ctx.repos.bindings.add(tx, binding)
            if also is not None:
                await also(tx)
        if binding is not None:
            self._threads.bound(binding.thread_id, binding.session_key)
        queued = {"run_id": run.id, "session_key": run.session_key, "kind": run.kind.value}
        log.info("run_queued", **queued, parent_run_id=run.parent_run_id)
        self._launcher.queue(run.id, placed=placed)
        self._ctx.signals.run_changed(run.id)

    def _resolve_model(self, reference: str) -> ResolvedModel:
        try:
            return self._models.resolve(reference)
        except UnknownModelError as exc:
            raise UserError(str(exc)) from None

    def main_session(self, origin: Origin, now: float) -> Session:
        """The main session of ``origin``'s conversation (stored when its first run is)."""
        agent_id = self._ctx.config.agents.default_agent
        return Session(
            key=main_session_key(agent_id, origin.conversation),
            agent_id=agent_id,
            kind=SessionKind.MAIN,
            depth=0,
            role=SessionRole.MAIN,
            control_scope=ControlScope.CHILDREN,
            requester_session_key=None,
            label=None,
            guild_id=origin.guild_id,
            channel_id=origin.channel_id,
            owner_user_id=None,
            created_at=now,
            sandboxed=self._ctx.config.agents.list[agent_id].sandboxed,
        )
