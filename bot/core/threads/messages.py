"""Where a message posted in a bound thread goes, and who may talk there.

A message reaches the session only from the thread's binder, the session's owner or a moderator; it is steered
into the session's live run, or starts a follow-up run, and either way the run stays the owner's (a moderator's
or a binder's message does not make the run theirs). A message from anyone else but the owner is audited. Anyone
else's message is not routed, nothing is started or touched, and its author is told once per thread (privately:
how is the adapter's business) that the thread is someone else's and how to get their own.

Messages to a live run keep the steer rate limit of ``/subagents steer`` (:mod:`bot.core.threads.steer_limit`, the same
counter): one past it is not delivered, and its author is told to send it again in a moment.

Who was told is remembered in memory, the most recent :data:`TOLD_LIMIT` (member, thread) pairs: a member is told
again only after a restart or once that many others were told since — a repeated courtesy, never a wrong routing,
so it is not worth a write per refused message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

from bot.core.attachments import FileSource, steered
from bot.core.context import CoreContext
from bot.core.errors import UserError
from bot.core.limits import checked_text
from bot.core.threads.bound_threads import BoundThreads
from bot.core.threads.steer_limit import SteerLimit
from bot.i18n import Words
from bot.records import Attachment, Binding, Origin, Run, Session
from storage.audit import AuditEntry

log = structlog.get_logger(__name__)

TOLD_LIMIT = 10_000
AUDIT_ACTION = "thread message"


class SessionInput(Protocol):
    """How a message reaches a session: steered into its live run, or as a new run."""

    async def steer(self, run_id: str, message: str) -> bool: ...

    async def follow_up(
        self,
        session: Session,
        message: str,
        previous: Run | None,
        parent_run_id: str | None = None,
        origin: Origin | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> str: ...


@dataclass(frozen=True)
class Heard:
    """A message in a bound thread: routed to its session or not, and what its author is to be told privately
    (``None``: nothing — routed, or they were told before)."""

    routed: bool
    notice: Words | None = None


def not_yours(thread_id: int, whose: int | None) -> Words:
    """The notice for a member whose message was not routed: the thread is someone else's."""
    if whose is None:
        return Words("thread-nobodys", {"thread": f"<#{thread_id}>"})
    return Words("thread-someone-elses", {"thread": f"<#{thread_id}>", "owner": f"<@{whose}>"})


def slow_down(interval: float, wait: float) -> Words:
    return Words("refused-slow-down", {"interval": f"{interval:g}", "wait": f"{max(wait, 0.1):.1f}"})


class Told:
    """The (thread, member) pairs told the thread is not theirs: the least recently told go past ``limit``."""

    def __init__(self, limit: int = TOLD_LIMIT) -> None:
        self._limit = limit
        self._pairs: OrderedDict[tuple[int, int], None] = OrderedDict()

    def first_time(self, thread_id: int, user_id: int) -> bool:
        """Whether ``user_id`` is told now (not already told about ``thread_id``); either way, remembered."""
        pair = (thread_id, user_id)
        if pair in self._pairs:
            self._pairs.move_to_end(pair)
            return False
        self._pairs[pair] = None
        if len(self._pairs) > self._limit:
            self._pairs.popitem(last=False)
        return True

    def __len__(self) -> int:
        return len(self._pairs)


class ThreadMessages:
    def __init__(self, ctx: CoreContext, routes: BoundThreads, sessions: SessionInput, steer_limit: SteerLimit) -> None:
        self._ctx = ctx
        self._routes = routes
        self._sessions = sessions
        self._steer_limit = steer_limit
        self.told = Told()

    async def route(
        self, thread_id: int, text: str, origin: Origin, *, is_moderator: bool = False, files: FileSource | None = None
    ) -> Heard | None:
        """``origin.user_id`` wrote in a thread (``is_moderator``: they moderate there): ``None`` if it is not bound,
        else what became of the message. Raises :class:`UserError` for a message refused with words (too long,
        over the steer rate limit, the session archived, an attachment it cannot take). ``files`` are fetched only
        for a message the session takes."""
        if self._routes.surely_unbound(thread_id):  # most threads, with PostgreSQL: answered in memory
            return None
        binding = await self._ctx.repos.bindings.get(thread_id)  # one read where the table answers (SQLite)
        if binding is None:
            return None
        session = await self._ctx.repos.sessions.get(binding.session_key)
        assert session is not None, f"binding of thread {thread_id} has no session"
        author, owner = origin.user_id, session.owner_user_id
        if author is None or (author not in (owner, binding.bound_by) and not is_moderator):
            return self._refused(binding, session, author)
        message = checked_text(text)
        latest = await self._ctx.repos.runs.latest_for_session(binding.session_key)
        live = latest if latest is not None and not latest.status.is_terminal else None
        if live is not None and (wait := self._steer_limit.wait_left(author, live.id)) > 0:
            raise UserError(slow_down(self._steer_limit.interval, wait))
        attachments = tuple(await files()) if files is not None else ()
        steer = steered(message, attachments) if live is not None else message
        now = self._ctx.clock()
        async with self._ctx.repos.db.transaction() as tx:  # a later deadline: the sweep finds it not due and moves on
            await self._ctx.repos.bindings.touch(tx, replace(binding, last_activity_at=now))
            if author != owner:
                run_id = latest.id if latest is not None else None
                entry = AuditEntry(origin.guild_id, author, owner, AUDIT_ACTION, run_id, message[:200], now)
                await self._ctx.repos.audit.record(tx, entry)
        if author != owner:
            log.warning("thread_message_audited", actor=author, owner=owner, thread_id=thread_id)
        if live is not None and await self._sessions.steer(live.id, steer):
            self._steer_limit.sent(author, live.id)
        else:  # the owner's run, answering in the thread (to this message)
            answering = replace(origin, user_id=owner)
            await self._sessions.follow_up(session, message, latest, origin=answering, attachments=attachments)
        return Heard(routed=True)

    def _refused(self, binding: Binding, session: Session, author: int | None) -> Heard:
        log.info("thread_message_refused", thread_id=binding.thread_id, user_id=author, session_key=session.key)
        if author is None or not self.told.first_time(binding.thread_id, author):
            return Heard(routed=False)
        whose = session.owner_user_id if session.owner_user_id is not None else binding.bound_by
        return Heard(routed=False, notice=not_yours(binding.thread_id, whose))
