"""The lanes runs wait in before they execute: sub-agent runs share the bounded fair lane (by member, then top-level
run); main-agent turns queue one at a time per session."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from bot.config import Config
from bot.core.fair_lane import FairLane
from bot.core.signals import Signals
from bot.records import Run, RunKind, RunStatus, Session
from storage.repositories import Repositories


class RunLanes:
    def __init__(self, config: Config, repos: Repositories, signals: Signals) -> None:
        self._repos = repos
        self._signals = signals
        self.subagents = FairLane(config.agents.defaults.subagents.max_concurrent)
        self._session_locks: dict[str, asyncio.Lock] = {}

    async def lane(self, run: Run, session: Session) -> contextlib.AbstractAsyncContextManager[Any]:
        """A delegated child (``spawn_subagent``, ``delegate``) runs for its caller's turn, which holds the caller's
        place already (a blocking child waiting for a slot its caller holds could wait forever)."""
        if session.delegation is not None:
            return contextlib.nullcontext()
        if run.kind is RunKind.CHAT:
            return self._session_turn(run)
        return self.subagents.slot(run.id, run.requester_user_id, await self._repos.runs.root_of(run.id))

    @contextlib.asynccontextmanager
    async def _session_turn(self, run: Run) -> AsyncIterator[None]:
        """A session's main-agent turns, one at a time; a turn queued behind one paused for approval waits until
        that one has resumed and ended (the session's history ends with the calls it paused on)."""
        lock = self._session_locks.setdefault(run.session_key, asyncio.Lock())
        while True:
            async with lock:
                ahead = await self._repos.runs.live_before(run.session_key, run.created_at)
                if RunStatus.AWAITING_APPROVAL not in ahead:
                    yield
                    return
            while await self._signals.wait_for(lambda: self._earlier_ended(run), 3600) is None:
                pass

    async def _earlier_ended(self, run: Run) -> bool | None:
        """``True`` once no turn ahead of ``run`` is paused or running (``None``: wait on)."""
        ahead = await self._repos.runs.live_before(run.session_key, run.created_at)
        return None if {RunStatus.AWAITING_APPROVAL, RunStatus.RUNNING} & set(ahead) else True
