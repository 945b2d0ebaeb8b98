"""Whose memory a session writes and which agents' memories it may read: its identity and allowlist.

A session's identity is its agent, except a ``spawn_subagent`` child's, which is its parent's: its writes go to the
parent. Its allowlist is its agent's ``[agents.list.<id>.workspace] read_memory_from`` plus its own identity; a
``spawn_subagent`` child inherits its parent's, which a ``memory_from`` override may only narrow (the parent's own
identity is always added back). A delegate is another agent: it has its own memory. Only a top-level turn (a
conversation's main agent, a person's or a schedule's spawn) gets memories recalled into its prompt, and only one
that is not a schedule's may be auto-saved; a session an agent started gets neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.context import CoreContext
from bot.records import Delegation, Run, Session, SpawnSite

_AGENT_STARTED = (SpawnSite.TOOL, SpawnSite.DELEGATE)
_MAX_CHAIN = 16  # sub-agents are at most a few levels deep; a longer chain is a broken record, cut short


def override_refusal(alias: str) -> str:
    """The refusal of a ``memory_from`` alias outside the parent's allowlist."""
    return (
        f'subagent allowlist override contains alias "{alias}" not present on parent\'s memory allowlist; '
        "SubAgent overrides may only narrow"
    )


@dataclass(frozen=True)
class MemoryScope:
    """What one run's memory tools act on: whose rows it writes, whose it reads, in which server, for whom."""

    identity: str
    readable: tuple[str, ...]  # the identity first
    guild_id: int | None  # None: a DM, which has no memory
    user_id: int | None  # whose conversation this is (None: a scheduled job from the config)
    channel_id: int | None
    session_key: str
    run_id: str
    top_level: bool
    scheduled: bool = False  # a scheduled job's run: it never auto-saves


class MemoryScopes:
    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx

    async def of(self, run: Run, session: Session) -> MemoryScope:
        identity, allowed = await self._resolved(session)
        return MemoryScope(
            identity=identity,
            readable=(identity, *sorted(allowed - {identity})),
            guild_id=session.guild_id,
            user_id=run.requester_user_id,
            channel_id=run.channel_id,
            session_key=session.key,
            run_id=run.id,
            top_level=session.spawn_site not in _AGENT_STARTED,
            scheduled=session.spawn_site is SpawnSite.CRON,
        )

    async def allowlist(self, session: Session) -> frozenset[str]:
        """The agents whose memories ``session`` may read (its identity among them)."""
        return (await self._resolved(session))[1]

    async def _resolved(self, session: Session, hops: int = 0) -> tuple[str, frozenset[str]]:
        """The session's identity and allowlist, its ``spawn_subagent`` parents' first."""
        parent = None
        if session.delegation is Delegation.SUBAGENT and session.requester_session_key and hops < _MAX_CHAIN:
            parent = await self._ctx.repos.sessions.get(session.requester_session_key)
        if parent is None:
            agent = self._ctx.config.agents.list.get(session.agent_id)
            read = agent.workspace.read_memory_from if agent is not None else []
            return session.agent_id, frozenset({session.agent_id, *read})
        identity, allowed = await self._resolved(parent, hops + 1)
        if (narrowed := await self._ctx.repos.memories.narrowed(session.key)) is not None:
            allowed = frozenset(narrowed) & allowed
        return identity, allowed | {identity}
