"""The policy envelope: what a session may do, as one small record — its agent's risk and runtime profile, its MCP
servers and its run's time limit — narrowed by its parent's for every child an agent starts, so a prompt-injected
child can never hold more than the agent that started it.

A child's policy is its parent's narrowed: a ``sessions_spawn`` child of another agent is refused when that agent's
policy is wider than the spawning session's (first failing axis wins, in the contract's words); a ``spawn_subagent``
child is the same agent (equal); a bounded delegate is narrowed by its caller's tools where it runs
(:mod:`bot.core.tools.tool_policy`, :mod:`bot.core.tools.mcp_tools`). An independent delegate is exempt (independent
skips the narrowing entirely): it runs on its target's own profile, by the operator's choice in ``delegates``. A
person's ``/subagents spawn`` and a scheduled job are top-level: nothing of an agent narrows them.
``max_cost_per_day_cents`` is an axis too; it is enforced as its agent's daily spending (:mod:`bot.core.budgets.meter`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import Config
from bot.core.context import CoreContext
from bot.core.errors import SpawnRefused
from bot.core.runs.spawn_policy import SpawnArgs, SpawnPlan
from bot.records import Delegation, Run, Session, SpawnSite

LEVELS = ("readonly", "supervised", "full")  # the autonomy levels, from least to most allowed
ESCALATES = "subagent policy override escalates beyond parent: {}"


def _mcp(tool: str) -> bool:
    return "__" in tool  # ``<server>__<tool>``; server names have no underscore


@dataclass(frozen=True)
class Envelope:
    level: str
    allowed_tools: frozenset[str] | None  # None: no constraint (MCP tools are admitted either way)
    excluded_tools: frozenset[str]
    mcp_servers: frozenset[str]
    always_ask: frozenset[str]
    max_actions_per_hour: int
    run_timeout_seconds: int  # 0: no limit
    max_cost_per_day_cents: int | None = None  # None: not capped (an agent naming no runtime profile; see Budgets)

    def admits(self, tool: str) -> bool:
        """The resolver's rule on this record: excluded wins; an MCP tool needs its server."""
        if tool in self.excluded_tools:
            return False
        if _mcp(tool):
            return tool.partition("__")[0] in self.mcp_servers
        return self.allowed_tools is None or tool in self.allowed_tools

    def narrowed(self, parent: Envelope) -> Envelope:
        """The most this envelope may do under ``parent``: the lower of each bound, the union of each refusal."""
        allowed = self.allowed_tools
        if parent.allowed_tools is not None:
            allowed = parent.allowed_tools if allowed is None else allowed & parent.allowed_tools
        limits = [t for t in (self.run_timeout_seconds, parent.run_timeout_seconds) if t]
        cents = [c for c in (self.max_cost_per_day_cents, parent.max_cost_per_day_cents) if c is not None]
        return Envelope(
            level=min(self.level, parent.level, key=LEVELS.index),
            allowed_tools=allowed,
            excluded_tools=self.excluded_tools | parent.excluded_tools,
            mcp_servers=self.mcp_servers & parent.mcp_servers,
            always_ask=self.always_ask | parent.always_ask,
            max_actions_per_hour=min(self.max_actions_per_hour, parent.max_actions_per_hour),
            run_timeout_seconds=min(limits, default=0),
            max_cost_per_day_cents=min(cents, default=None),
        )

    def escalation_beyond(self, parent: Envelope) -> str | None:
        """The first axis on which this envelope escalates beyond ``parent``'s, or None."""
        if LEVELS.index(self.level) > LEVELS.index(parent.level):
            return f"subagent autonomy={self.level} exceeds parent's {parent.level}"
        if parent.allowed_tools is not None and self.allowed_tools is None:
            return "subagent allowed_tools is unrestricted but the parent restricts it"
        for tool in sorted(self.allowed_tools or ()):
            if not parent.admits(tool):
                return f'subagent allowed_tools entry "{tool}" is not admitted by the parent\'s tools'
        for tool in sorted(parent.excluded_tools):
            if self.admits(tool):
                return f'subagent drops excluded_tools entry "{tool}" that the parent enforces'
        for server in sorted(self.mcp_servers - parent.mcp_servers):
            return f'subagent mcp_servers entry "{server}" is not present on the parent\'s mcp_servers'
        for tool in sorted(parent.always_ask - self.always_ask):
            if self.admits(tool):
                return f'subagent drops always_ask entry "{tool}" that the parent enforces'
        actions, most = self.max_actions_per_hour, parent.max_actions_per_hour
        if actions > most:
            return f"subagent max_actions_per_hour={actions} exceeds parent's {most}"
        cents, ceiling = self.max_cost_per_day_cents, parent.max_cost_per_day_cents
        if cents is not None and ceiling is not None and cents > ceiling:
            return f"subagent max_cost_per_day_cents={cents} exceeds parent's {ceiling}"
        if parent.run_timeout_seconds and not 0 < self.run_timeout_seconds <= parent.run_timeout_seconds:
            asked = self.run_timeout_seconds or "0 (no limit)"
            return f"subagent run_timeout_seconds={asked} exceeds parent's {parent.run_timeout_seconds}"
        return None


NOTHING = Envelope("readonly", frozenset(), frozenset(), frozenset(), frozenset(), 0, 0, 0)


def envelope_of(config: Config, agent_id: str, run_timeout_seconds: int = 0) -> Envelope:
    """An agent's own envelope; no risk profile means no constraint (level ``full``)."""
    risk = config.risk_profile_of(agent_id)
    return Envelope(
        level=risk.level if risk else "full",
        allowed_tools=frozenset(risk.allowed_tools) if risk and risk.allowed_tools else None,
        excluded_tools=frozenset(risk.excluded_tools if risk else ()),
        mcp_servers=frozenset(config.agents.list[agent_id].mcp_servers),
        always_ask=frozenset(tool.strip() for tool in (risk.always_ask if risk else ()) if tool.strip()),
        max_actions_per_hour=config.runtime_profile_of(agent_id).max_actions_per_hour,
        run_timeout_seconds=run_timeout_seconds,
        max_cost_per_day_cents=config.runtime_profile_of(agent_id).max_cost_per_day_cents
        if config.agents.list[agent_id].runtime_profile is not None
        else None,
    )


def _narrowed_by_requester(session: Session) -> bool:
    """Whether an agent started ``session`` inside its own policy: not a person's or a schedule's, not an
    independent delegate."""
    return (
        session.requester_session_key is not None
        and session.spawn_site in (SpawnSite.TOOL, SpawnSite.DELEGATE)
        and session.delegation is not Delegation.INDEPENDENT
    )


class PolicyEnvelopes:
    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx

    async def effective(self, session: Session, run: Run | None = None) -> Envelope:
        """``session``'s envelope narrowed up its chain of agent parents (``run``: its time limit)."""
        own = envelope_of(self._ctx.config, session.agent_id, run.timeout_seconds if run else 0)
        if not _narrowed_by_requester(session):
            return own
        requester = await self._ctx.repos.sessions.get(session.requester_session_key or "")
        if requester is None:  # gone: nothing it might not have had is granted
            return own.narrowed(NOTHING)
        return own.narrowed(await self.effective(requester))

    async def vet_spawn(self, requester: Session, requester_run: Run, args: SpawnArgs, plan: SpawnPlan) -> None:
        """Refuse an agent's ``sessions_spawn`` whose child would hold more than the spawning session.

        The model is the spawn policy's: one the config does not name is dropped there. Only an explicit
        ``runTimeoutSeconds`` is the child's ask; a configured default is the operator's choice."""
        timeout = plan.timeout_seconds if args.run_timeout_seconds is not None else None
        parent = await self.effective(requester, requester_run)
        asked = parent.run_timeout_seconds if timeout is None else timeout
        if violation := envelope_of(self._ctx.config, plan.agent_id, asked).escalation_beyond(parent):
            raise SpawnRefused("forbidden", ESCALATES.format(violation))
