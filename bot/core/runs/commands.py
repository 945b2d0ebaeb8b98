"""What people's commands, agents' tools and thread messages do to runs: kill, steer, follow up.

One room for the three, so a slash command, a button, a tool call and a message in a bound thread act on a run
the same way. Who may is decided before, by :mod:`bot.core.oversight.run_authority`.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from bot.core.context import CoreContext
from bot.core.runs.effects import Effects
from bot.core.runs.ports import PendingApprovals
from bot.core.runs.settlement import Settlement
from bot.core.runs.spawning import Spawning
from bot.records import Attachment, Origin, Run, Session

log = structlog.get_logger(__name__)


class RunCommands:
    """Kill, steer and follow up runs, with everything a kill's commit asks for applied."""

    def __init__(
        self,
        ctx: CoreContext,
        settlement: Settlement,
        effects: Effects,
        spawning: Spawning,
        approvals: PendingApprovals,
    ) -> None:
        self._ctx = ctx
        self._settlement = settlement
        self._effects = effects
        self._spawning = spawning
        self._approvals = approvals

    async def kill(self, run_id: str) -> list[Run]:
        """Stop a run and, cascading, every live run below it (deepest first). Killed runs announce nothing."""
        stopped, after = await self._settlement.kill(run_id)
        if stopped:
            self._effects.apply(after)
            await self._approvals.runs_ended([run.id for run in stopped])
        return stopped

    async def steer(self, run_id: str, message: str) -> bool:
        """Queue a message for a live run, read at its next model request; False if the run ended meanwhile.

        A run waiting on its children reads it with their results.
        """
        repos = self._ctx.repos
        async with repos.db.transaction() as tx:
            steered = await repos.inbox.add_steer(tx, run_id=run_id, content=message, now=self._ctx.clock())
        log.info("run_steered" if steered else "steer_too_late", run_id=run_id)
        return steered

    async def follow_up(
        self,
        session: Session,
        message: str,
        previous: Run | None,
        parent_run_id: str | None = None,
        origin: Origin | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> str:
        """A new run in an existing session, answering ``message`` and its attachments."""
        return await self._spawning.follow_up(session, message, previous, parent_run_id, origin, attachments)
