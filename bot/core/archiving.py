"""Archiving finished sub-agent sessions, and the session of each scheduled firing: ``archive_after_minutes``
after a run ends (``cleanup: delete`` as soon as its result is delivered), never while a run is live or a thread is
bound. Deadlines live in ``sessions.archive_at`` and their timers are rebuilt from it at start-up; an archived
session stays readable, takes no more messages, and is pruned by retention once old enough."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from bot.config import Config
from bot.core.timers import Timers, skipped_if_bad
from bot.records import Cleanup, Session, SessionKind, SpawnSite
from storage.db import Connection
from storage.repositories import Repositories

log = structlog.get_logger(__name__)


def _archivable(session: Session) -> bool:
    """A sub-agent's session, or a scheduled firing's (a main session of its own that nobody writes to again); a
    conversation's main session lives on."""
    return session.kind == SessionKind.SUBAGENT or session.spawn_site is SpawnSite.CRON


class Archiving:
    def __init__(self, config: Config, repos: Repositories, timers: Timers, clock: Callable[[], float]) -> None:
        self._minutes = config.agents.defaults.subagents.archive_after_minutes
        self._repos = repos
        self._timers = timers
        self._clock = clock

    async def start(self) -> None:
        for key, when in await self._repos.sessions.archive_schedule():
            with skipped_if_bad("archive_deadline", session_key=key, archive_at=when):
                self.schedule(key, when)

    async def mark_deadline(self, tx: Connection, session: Session, now: float) -> float | None:
        """Write the deadline of a sub-agent session whose run just ended (inside the caller's transaction); a
        session bound to a thread gets its deadline only when the binding ends."""
        if not _archivable(session) or session.cleanup != Cleanup.KEEP or self._minutes <= 0:
            return None
        if await self._repos.bindings.for_session(session.key):
            return None
        deadline = now + self._minutes * 60
        await self._repos.sessions.set_archive_at(tx, session.key, deadline)
        return deadline

    def schedule(self, session_key: str, when: float) -> None:
        self._timers.at(f"archive:{session_key}", when, self.archive, session_key)

    def cancel(self, session_key: str) -> None:
        """A session that takes a new run (or a thread) is not archived under it."""
        self._timers.cancel(f"archive:{session_key}")

    async def after_unbinding(self, session_key: str) -> None:
        """A session left with no thread is archived in due course, like any other that has finished."""
        session = await self._repos.sessions.get(session_key)
        latest = await self._repos.runs.latest_for_session(session_key)
        if session is None or latest is None or not latest.status.is_terminal or session.archived_at is not None:
            return
        if session.cleanup == Cleanup.DELETE:
            await self.archive(session_key)
            return
        async with self._repos.db.transaction() as tx:
            deadline = await self.mark_deadline(tx, session, self._clock())
        if deadline is not None:
            self.schedule(session_key, deadline)

    async def archive(self, session_key: str) -> None:
        """Close a finished session for good; never one that is live or still bound to a thread."""
        session = await self._repos.sessions.get(session_key)
        if session is None or not _archivable(session):
            return
        if await self._repos.bindings.for_session(session_key):
            return
        latest = await self._repos.runs.latest_for_session(session_key)
        if latest is not None and not latest.status.is_terminal:
            return
        async with self._repos.db.transaction() as tx:
            archived = await self._repos.sessions.archive(tx, session_key, self._clock())
        if archived:
            log.info("session_archived", session_key=session_key)
