"""Archiving finished sub-agent sessions, and the session of each scheduled firing: ``archive_after_minutes``
after a run ends (``cleanup: delete`` as soon as its result is delivered), never while a run is live or a thread is
bound. Deadlines live in ``sessions.archive_at``, swept by one timer (:mod:`bot.core.deadline_sweep`) that wakes at the
earliest, at start-up as well: ten thousand finished sessions are one APScheduler job, not ten thousand jobs held
(and walked by every full garbage collection) for an hour. An archived session stays readable, takes no more
messages, and is pruned by retention once old enough."""

from __future__ import annotations

import structlog

from bot.core.context import CoreContext
from bot.core.deadline_sweep import DeadlineSweep
from bot.records import Cleanup, Session, SessionKind, SpawnSite
from storage.db import Connection

log = structlog.get_logger(__name__)


def _archivable(session: Session) -> bool:
    """Whether a session is archived once finished: a sub-agent's, or a scheduled firing's.

    A firing's is a main session of its own that nobody writes to again; a conversation's main session lives on."""
    return session.kind == SessionKind.SUBAGENT or session.spawn_site is SpawnSite.CRON


class Archiving:
    def __init__(self, ctx: CoreContext) -> None:
        self._minutes = ctx.config.agents.defaults.subagents.archive_after_minutes
        self._ctx = ctx
        self._deadlines = DeadlineSweep(
            "archive", ctx.timers, ctx.clock, ctx.repos.sessions.next_archive_at, self._archive_due
        )

    async def start(self) -> None:
        await self._deadlines.start()

    async def mark_deadline(self, tx: Connection, session: Session, now: float) -> float | None:
        """Write the deadline of a sub-agent session whose run just ended.

        It is written inside the caller's transaction. A session bound to a thread gets its deadline only when the
        binding ends."""
        if not _archivable(session) or session.cleanup != Cleanup.KEEP or self._minutes <= 0:
            return None
        if await self._ctx.repos.bindings.for_session(session.key):
            return None
        deadline = now + self._minutes * 60
        await self._ctx.repos.sessions.set_archive_at(tx, session.key, deadline)
        return deadline

    def scheduled(self, when: float) -> None:
        """An archive deadline at ``when`` was written: the sweep wakes for it if it is the earliest. (One cleared,
        because its session took a new run or a thread, is simply not found due.)"""
        self._deadlines.moved(when)

    async def after_unbinding(self, session_key: str) -> None:
        """Archive a session left with no thread in due course.

        It goes like any other that has finished."""
        session = await self._ctx.repos.sessions.get(session_key)
        latest = await self._ctx.repos.runs.latest_for_session(session_key)
        if session is None or latest is None or not latest.status.is_terminal or session.archived_at is not None:
            return
        if session.cleanup == Cleanup.DELETE:
            await self.archive(session_key)
            return
        async with self._ctx.repos.db.transaction() as tx:
            deadline = await self.mark_deadline(tx, session, self._ctx.clock())
        if deadline is not None:
            self.scheduled(deadline)

    async def _archive_due(self, now: float) -> None:
        async for session_key in self._ctx.repos.sessions.due_for_archive(now):
            try:
                if not await self.archive(session_key):
                    async with self._ctx.repos.db.transaction() as tx:
                        await self._ctx.repos.sessions.clear_archive_at(tx, session_key, due_by=now)
            except Exception:
                log.exception("session_not_archived", session_key=session_key)

    async def archive(self, session_key: str) -> bool:
        """Close a finished session for good; never one that is live or still bound to a thread. Whether it is
        archived now (or was already)."""
        session = await self._ctx.repos.sessions.get(session_key)
        if session is None or not _archivable(session):
            return False
        if session.archived_at is not None:
            return True
        if await self._ctx.repos.bindings.for_session(session_key):
            return False
        latest = await self._ctx.repos.runs.latest_for_session(session_key)
        if latest is not None and not latest.status.is_terminal:
            return False
        async with self._ctx.repos.db.transaction() as tx:
            archived = await self._ctx.repos.sessions.archive(tx, session_key, self._ctx.clock())
        if archived:
            log.info("session_archived", session_key=session_key)
        return True
