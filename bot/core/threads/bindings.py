"""A session's Discord thread: open it, introduce it, route what people write in it, bind and unbind, expire
bindings at their idle or max-age deadline, and reconcile with threads closed while the bot was down.

Bindings live in the database with their next deadline (``deadline_at``); one sweep (:mod:`bot.core.deadline_sweep`)
wakes at the earliest and ends the due ones. Every process sharing the database sweeps: a deadline ends its binding
by compare-and-set, so one process says farewell. Who may talk to a session in its thread, and what becomes of a
message there: :mod:`bot.core.threads.messages`.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import replace

import structlog

from bot.core.context import CoreContext
from bot.core.deadline_sweep import DeadlineSweep
from bot.core.errors import SpawnRefused, UserError
from bot.core.guild_settings import GuildSettings
from bot.core.runs.spawn_policy import SpawnPlan
from bot.core.threads.archiving import Archiving
from bot.core.threads.bound_threads import BoundThreads
from bot.core.threads.port import (
    ThreadPort,
    ThreadUnavailable,
    auto_archive_minutes,
    farewell_text,
    intro_text,
    thread_name,
)
from bot.i18n import Words
from bot.records import Binding, Origin

log = structlog.get_logger(__name__)


class ThreadBindings:
    def __init__(
        self, ctx: CoreContext, threads: ThreadPort | None, guild_settings: GuildSettings, archiving: Archiving
    ) -> None:
        self._ctx = ctx
        self._threads = threads
        self._guild_settings = guild_settings
        self._archiving = archiving
        self._deadlines = DeadlineSweep(
            "bindings", ctx.timers, ctx.clock, ctx.repos.bindings.next_deadline, self._expire_due
        )
        self.routes = BoundThreads(ctx.repos)

    async def start(self) -> None:
        """Follow the bindings in memory, wake for the earliest deadline, end bindings left behind.

        The bindings left behind are run-mode ones whose run ended while the bot was down."""
        self.routes.start()
        await self._deadlines.start()
        for binding in await self._ctx.repos.bindings.run_mode():
            assert binding.ends_with_run_id is not None
            await self.end_run_bindings(binding.ends_with_run_id)

    async def close(self) -> None:
        await self.routes.close()

    async def open_thread(self, plan: SpawnPlan, origin: Origin) -> Binding:
        """Create the thread a spawned session will live in (a DM binds itself); not yet persisted."""
        settings = (await self._guild_settings.effective(origin.guild_id)).thread_bindings
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
            raise SpawnRefused("error", Words("refused-no-threads"))
        try:
            ref = await self._threads.create_thread(
                origin.channel_id,
                thread_name(plan.label or plan.agent_id),
                auto_archive_minutes(unbound.idle_seconds, settings.auto_archive_minutes),
            )
        except ThreadUnavailable as unavailable:
            raise SpawnRefused(
                "error", Words("refused-spawn-thread-unavailable", {"reason": str(unavailable)})
            ) from None
        return replace(unbound, thread_id=ref.thread_id, parent_channel_id=ref.parent_channel_id)

    @contextlib.asynccontextmanager
    async def archived_if_refused(self, binding: Binding | None) -> AsyncIterator[None]:
        """Archive the thread opened for a spawn that its admission then refuses.

        That happens when a run admitted since the early check spent the budget. Nothing is bound to the thread, and it
        is not left open and empty."""
        try:
            yield
        except UserError:
            if binding is not None and binding.parent_channel_id is not None and self._threads is not None:
                with contextlib.suppress(ThreadUnavailable):
                    await self._threads.archive(binding.thread_id)
            raise

    async def introduce(self, binding: Binding, label: str) -> None:
        self._schedule_deadline(binding)
        if self._threads is None:
            return
        try:
            await self._threads.post(
                binding.thread_id, intro_text(label, binding.idle_seconds, binding.max_age_seconds)
            )
        except ThreadUnavailable as unavailable:
            log.warning("thread_intro_failed", thread_id=binding.thread_id, error=str(unavailable))

    async def reconcile(self) -> None:
        """Unbind threads people deleted, locked or archived while the bot was down.

        No farewell is posted. Discord is asked server by server, so a server's open threads are one request, not one
        per binding."""
        if self._threads is None:
            return
        by_guild: dict[int, list[int]] = defaultdict(list)
        async for guild_id, thread_id in self._ctx.repos.bindings.threads_by_guild():
            by_guild[guild_id].append(thread_id)
        for guild_id, thread_ids in by_guild.items():
            for thread_id, closed in (await self._threads.closed_among(guild_id, thread_ids)).items():
                if closed is True:
                    await self.unbind(thread_id)

    async def bind(self, binding: Binding) -> None:
        """Create or replace a binding, and (re)schedule its deadline. A bound session is not archived under
        its thread: any archive deadline it had is cleared."""
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.bindings.add(tx, binding)
            await self._ctx.repos.sessions.set_archive_at(tx, binding.session_key, None)
        self.routes.bound(binding.thread_id, binding.session_key)
        self._schedule_deadline(binding)
        log.info("thread_bound", thread_id=binding.thread_id, session_key=binding.session_key)

    def bound(self, thread_id: int, session_key: str) -> None:
        """A binding just persisted by a spawn: its thread's messages go to ``session_key`` from now on."""
        self.routes.bound(thread_id, session_key)

    async def unbind(
        self, thread_id: int, *, farewell: str | None = None, unless_changed_from: Binding | None = None
    ) -> bool:
        """End a binding; the thread itself is left alone.

        With ``unless_changed_from``, only if it is still that one, so of processes racing to end it, one does.
        ``farewell`` is posted into it when given. A session left
        with no thread is archived in due course, like any other that has finished."""
        async with self._ctx.repos.db.transaction() as tx:
            removed = await self._ctx.repos.bindings.remove(tx, thread_id, unless_changed_from=unless_changed_from)
        if removed is None:
            return False
        self.routes.unbound(thread_id)
        log.info("thread_unbound", thread_id=thread_id, farewell=farewell is not None)
        if farewell and self._threads is not None:
            with contextlib.suppress(ThreadUnavailable):
                await self._threads.post(thread_id, farewell)
        await self._archiving.after_unbinding(removed.session_key)
        return True

    async def end_run_bindings(self, run_id: str) -> None:
        """A run-mode spawn's thread binding ends with its run: once the run's announcement is delivered (so the
        result lands in the thread first), or at once when there is nothing left to deliver."""
        bindings = await self._ctx.repos.bindings.ending_with(run_id)
        if not bindings:
            return
        run = await self._ctx.repos.runs.get(run_id)
        if run is None or not run.status.is_terminal:
            return
        if any(row.status == "pending" and row.notice is None for row in await self._ctx.repos.outbox.for_run(run_id)):
            return
        for binding in bindings:
            await self.unbind(binding.thread_id, farewell=farewell_text("run-ended", 0))

    def _schedule_deadline(self, binding: Binding) -> None:
        deadline = binding.deadline()
        if deadline is not None:
            self._deadlines.moved(deadline[0])

    async def _expire_due(self, now: float) -> None:
        async for binding in self._ctx.repos.bindings.due(now):
            try:
                deadline = binding.deadline()
            except (TypeError, ValueError):  # a row an older bot or a bad edit left: it is not ended automatically
                log.warning("binding_deadline_unreadable", binding=repr(binding))
                deadline = None
            if deadline is None or deadline[0] > now:  # its stored deadline says less than its lifetimes: corrected
                async with self._ctx.repos.db.transaction() as tx:
                    await self._ctx.repos.bindings.set_deadline(
                        tx, binding.thread_id, deadline[0] if deadline else None
                    )
                continue
            try:
                await self._expire(binding, deadline[1])
            except Exception:
                log.exception("binding_not_expired", thread_id=binding.thread_id)

    async def _expire(self, binding: Binding, reason: str) -> None:
        thread_id = binding.thread_id
        seconds = binding.idle_seconds if reason == "idle" else binding.max_age_seconds
        if not await self.unbind(thread_id, farewell=farewell_text(reason, seconds), unless_changed_from=binding):
            return  # another process ended it first, or activity moved its deadline meanwhile
        settings = (await self._guild_settings.effective(binding.guild_id)).thread_bindings
        if settings.archive_on_expiry and binding.guild_id is not None and self._threads is not None:
            try:
                await self._threads.archive(thread_id)
            except ThreadUnavailable as unavailable:
                log.warning("thread_archive_failed", thread_id=thread_id, error=str(unavailable))
