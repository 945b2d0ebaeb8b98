"""Which session a bound thread's messages go to, in memory.

Every message in any thread asks, and with a PostgreSQL store the table is a network round trip away, where a dict
answers at once.

The map follows the table through the store's notices of every binding made or ended, by this process or another
(the bindings repository notifies in the transaction that changes the table, so a notice comes after its commit, in
commit order): it listens first, then loads the table, then applies each notice. While it does not listen (starting,
or after its connection dropped, until it listens again) the table answers. This process's own changes are applied at
once as well, so a thread bound here routes before its notice comes back. A SQLite store has no notices: its
processes read the table, a local read there.
"""

from __future__ import annotations

import asyncio

import structlog

from storage.bindings import NOTICES
from storage.repositories import Repositories

log = structlog.get_logger(__name__)
_LISTEN_AGAIN_SECONDS = 1.0  # after the listening connection dropped (the table answers meanwhile)
_CANCEL_AGAIN_SECONDS = 0.1


class BoundThreads:
    def __init__(self, repos: Repositories) -> None:
        self._repos = repos
        self._sessions: dict[int, str] | None = None  # None: not following the table, which answers
        self._following: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._following = asyncio.create_task(self._follow(), name="bound-threads")

    async def close(self) -> None:
        """Stop following, cancelling until the task has ended: a cancellation that comes as a notice arrives can be
        lost inside psycopg's wait for notices (Python 3.11's ``wait_for`` returns the notice instead), and the task
        would wait for the next notice, which may never come."""
        while self._following is not None and not self._following.done():
            self._following.cancel()
            await asyncio.wait([self._following], timeout=_CANCEL_AGAIN_SECONDS)
        self._following = None

    def surely_unbound(self, thread_id: int) -> bool:
        """Whether memory alone says the thread is not bound (only while following; else the table must be asked)."""
        return self._sessions is not None and thread_id not in self._sessions

    async def session_of(self, thread_id: int) -> str | None:
        """The session ``thread_id`` is bound to, if it is."""
        if self._sessions is not None:
            return self._sessions.get(thread_id)
        binding = await self._repos.bindings.get(thread_id)
        return binding.session_key if binding is not None else None

    def bound(self, thread_id: int, session_key: str) -> None:
        """This process bound the thread (committed)."""
        if self._sessions is not None:
            self._sessions[thread_id] = session_key

    def unbound(self, thread_id: int) -> None:
        """This process ended the thread's binding (committed)."""
        if self._sessions is not None:
            self._sessions.pop(thread_id, None)

    async def _follow(self) -> None:
        """Until closed, where the store has notices (else it ends at once)."""
        while (listening := self._repos.db.listening(NOTICES)) is not None:
            try:
                async with listening as notices:
                    self._sessions = {thread: key async for thread, key in self._repos.bindings.sessions_by_thread()}
                    log.info("bound_threads_followed", bindings=len(self._sessions))
                    async for notice in notices:
                        thread, _, session = notice.partition(" ")
                        if session:
                            self._sessions[int(thread)] = session
                        else:
                            self._sessions.pop(int(thread), None)
            except Exception as error:  # the connection dropped, or the store is down: the table answers meanwhile
                reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                log.warning("bound_threads_not_followed", error=reason)
            finally:
                self._sessions = None
            await asyncio.sleep(_LISTEN_AGAIN_SECONDS)
