"""Who may act on a run: its owner, or a moderator of its server, audited when it is someone else's.

One rule for every way of acting on a run. A person's slash command or button comes with an :class:`Actor` the
Discord side built at click time. An agent's tool acts with the authority of the person whose turn is running
(for a run an agent spawned, the person whose message started the chain), never more: the turn's person is
asked about at the moment the tool acts, through :class:`Moderation`, which the Discord side provides.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import structlog

from bot.core.context import CoreContext
from bot.core.errors import UserError
from bot.i18n import Words
from bot.records import Actor, Run
from storage.audit import AuditEntry

log = structlog.get_logger(__name__)


class Moderation(Protocol):
    """Whether a person moderates in a channel right now.

    Roles and permissions change between turns."""

    async def is_moderator(self, user_id: int, guild_id: int | None, channel_id: int | None) -> bool: ...


class NobodyModerates:
    """The core's default until the Discord side registers its own: no turn acts on another's run."""

    async def is_moderator(self, user_id: int, guild_id: int | None, channel_id: int | None) -> bool:
        return False


class Forbidden(UserError):
    """A person (or an agent acting for one) may not act on this run."""

    status = "forbidden"


def not_yours(action: str, label: str, owner: int | None) -> Words:
    """The refusal people and agents both read."""
    return Words("refused-not-yours", {"action": action, "label": label, "owner": f"<@{owner}>"})


class RunAuthority:
    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx
        self.moderation: Moderation = NobodyModerates()

    async def check(self, actor: Actor, run: Run | None, label: str, action: str, detail: str | None = None) -> None:
        """A person's command or button: raises :class:`Forbidden` unless ``actor`` may ``action`` the run."""
        await self._decide(
            actor.user_id, run, label, action, detail, lambda: _known(actor.is_moderator), actor.guild_id
        )

    async def check_turn(
        self, turn: Run | None, run: Run | None, label: str, action: str, detail: str | None = None
    ) -> None:
        """An agent's tool call made during ``turn``: the turn's person's authority, asked about now."""
        user = turn.requester_user_id if turn is not None else None
        where = turn if turn is not None else run

        async def moderates() -> bool:
            if user is None or where is None:  # a scheduled job's turn speaks for nobody
                return False
            return await self.moderation.is_moderator(user, where.guild_id, where.channel_id)

        await self._decide(user, run, label, action, f"by an agent's tool; {detail or action}", moderates)

    async def _decide(
        self,
        user: int | None,
        run: Run | None,
        label: str,
        action: str,
        detail: str | None,
        moderates: Callable[[], Awaitable[bool]],
        guild_id: int | None = None,
    ) -> None:
        owner = run.requester_user_id if run is not None else None
        if owner == user:
            return
        if user is None or not await moderates():
            raise Forbidden(not_yours(action, label, owner))
        guild = run.guild_id if run is not None else guild_id  # no run (a pruned one): where the actor acts
        run_id = run.id if run is not None else None
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.audit.record(
                tx, AuditEntry(guild, user, owner, action, run_id, detail[:200] if detail else None, self._ctx.clock())
            )
        log.warning("moderator_action", action=action, actor=user, owner=owner, run_id=run_id, guild_id=guild)


async def _known(value: bool) -> bool:
    return value
