"""The lanes runs wait in before they execute, in this process: sub-agent runs share the bounded fair lane (by member,
then top-level run); main-agent turns queue one at a time per session. Durable runs wait in DBOS's queues instead
(``durable.run_queues``), shared by every process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from bot.core.context import CoreContext
from bot.core.runs.fair_lane import FairLane
from bot.keyed_locks import KeyedLocks
from bot.records import Run, RunKind, RunStatus, Session

_LOOK_AGAIN_SECONDS = 2.0


class RunLanes:
    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx
        self.subagents = FairLane(ctx.config.agents.defaults.subagents.max_concurrent)
        self._session_locks: KeyedLocks[str] = KeyedLocks()

    async def lane(self, run: Run, session: Session, *, queued: bool) -> contextlib.AbstractAsyncContextManager[Any]:
        """What a run waits for before its turns: a slot, earlier turns, or nothing.

        A delegated child (``spawn_subagent``, ``delegate``) waits for nothing: it runs for its caller's turn, which
        holds the caller's place already (a blocking child waiting for a slot its caller holds could wait forever).
        ``queued``: a durable run, whose DBOS queue gave it its place (``durable.run_queues``); a main-agent turn still
        waits for the session's earlier turns paused for approval. A lane run its launcher started once its slot was
        free (``FairLane.join``) holds it already."""
        if session.delegation is not None:
            return contextlib.nullcontext()
        if run.kind is RunKind.CHAT:
            return self._after_earlier_turns(run) if queued else self._session_turn(run)
        if queued or self.subagents.holds(run.id):  # its launcher started it holding its slot
            return contextlib.nullcontext()
        return self.subagents.slot(run.id, run.requester_user_id, await self._ctx.repos.runs.root_of(run.id))

    @contextlib.asynccontextmanager
    async def _session_turn(self, run: Run) -> AsyncIterator[None]:
        """A session's main-agent turns, one at a time; a turn queued behind one paused for approval waits until
        that one has resumed and ended (the session's history ends with the calls it paused on). A turn woken by its
        decision is running before it takes the session's lock again: the lock alone does not keep a later turn out."""
        while True:
            async with self._session_locks.hold(run.session_key):
                if await self._earlier_ended(run):
                    yield
                    return
            await self._wait_for_earlier(run)

    @contextlib.asynccontextmanager
    async def _after_earlier_turns(self, run: Run) -> AsyncIterator[None]:
        """A queued turn the chat queue started (no other turn of its session is): it waits while an earlier one is
        paused for approval, or running again after its decision (a woken turn is not queued)."""
        if not await self._earlier_ended(run):
            await self._wait_for_earlier(run)
        yield

    async def _wait_for_earlier(self, run: Run) -> None:
        """Until no turn ahead of ``run`` is paused or running; looked at again every few seconds as well, since the
        earlier turn may be woken and end in another process."""
        while await self._ctx.signals.wait_for(lambda: self._earlier_ended(run), _LOOK_AGAIN_SECONDS) is None:
            pass

    async def _earlier_ended(self, run: Run) -> bool | None:
        """``True`` once no turn ahead of ``run`` is paused or running (``None``: wait on)."""
        ahead = await self._ctx.repos.runs.live_before(run.session_key, run.created_at)
        return None if {RunStatus.AWAITING_APPROVAL, RunStatus.RUNNING} & set(ahead) else True
