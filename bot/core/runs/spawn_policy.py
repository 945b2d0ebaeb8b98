"""Deciding whether a spawn may happen, and with what: the validation chain of ``sessions_spawn``.

The order and wording are the ``sessions_spawn`` contract's (:mod:`bot.profiles`), so agents trained on its messages
recover the same way. Every refusal happens before anything is written: no run starts on a refused spawn. ``plan``
decides from the config alone; ``checked_plan`` also checks an explicit model, asking its provider.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from bot.agents.model_catalog import ModelCatalog
from bot.agents.models import ModelFactory, ResolvedModel, UnknownModelError
from bot.config import AGENT_ID_PATTERN, THINKING_LEVELS, AgentConfig, Config, ThreadBindingSettings
from bot.core.errors import SpawnRefused, TextRefused
from bot.core.guild_settings import binding_gate
from bot.core.limits import MAX_LABEL_CHARS, checked_text
from bot.core.runs.queue_caps import NOTHING_QUEUED, check_member, check_queue
from bot.core.runtimes import acp_target
from bot.i18n import Words
from bot.records import Cleanup, Run, Session, SessionMode, SessionRole
from bot.text import has_visible_text, quoted
from storage.runs import QueueLoad


@dataclass(frozen=True)
class SpawnArgs:
    task: str
    label: str | None = None
    agent_id: str | None = None
    model: str | None = None
    thinking: str | None = None
    run_timeout_seconds: float | None = None
    thread: bool = False
    mode: str | None = None
    cleanup: str = "keep"
    sandbox: str = "inherit"
    runtime: str = "subagent"  # or "acp": ``agent_id`` names an ACP agent (:mod:`bot.core.runtimes`)


@dataclass(frozen=True)
class SpawnPlan:
    agent_id: str
    task: str
    label: str | None
    mode: SessionMode
    cleanup: Cleanup
    model: ResolvedModel
    thinking: str | None
    timeout_seconds: int
    depth: int
    role: SessionRole
    sandboxed: bool
    thread: bool = False
    warning: str | None = None  # an agent's explicit model, dropped: why, and what runs instead
    acp_agent: str | None = None  # the ACP agent that runs the child (runtime "acp")


def _first(*values):
    return next((value for value in values if value is not None), None)


@dataclass(frozen=True)
class SpawnContext:
    """Who is spawning: the requester session and its current run (``None`` for a user's slash command)."""

    requester: Session
    requester_run: Run | None
    active_children: int  # live children an agent of the requester spawned
    by_user: bool
    thread_settings: ThreadBindingSettings
    member_active: int = 0  # live sub-agents on this server of the member asking (a person's spawn)
    member_limit: int = 0  # 0 = no limit
    queued: QueueLoad = NOTHING_QUEUED  # runs waiting for the sub-agent lane


_BeforeModel = tuple[str, str | None, SessionMode, Cleanup, tuple[str, AgentConfig]]  # task … (target id, target)


class SpawnPolicy:
    def __init__(self, config: Config, models: ModelFactory) -> None:
        self._config = config
        self._models = models
        self._catalog = ModelCatalog(models)

    async def checked_plan(self, args: SpawnArgs, context: SpawnContext) -> SpawnPlan:
        """``plan``, with an explicit model checked before it is built. An agent's must be one the config names,
        any must be served. A person is refused (they can retry); an agent's model is dropped with a warning and
        its child runs on the default, so the agent's flow goes on. A refused name builds nothing. An ACP agent
        (runtime "acp") is checked first; its child is then the requester's agent's for every other check."""
        if acp_agent := acp_target(args.runtime, args.agent_id, self._config, sandboxed=context.requester.sandboxed):
            args = replace(args, agent_id=context.requester.agent_id)
        before, configured = self._before_model(args, context), self._config.configured_models()
        if (model := args.model) is not None and not context.by_user and model not in configured:
            refusal: str | None = f"An agent may pick only a model the config names ({', '.join(configured)})."
        else:
            refusal = model and await self._catalog.refusal(model)
        if not refusal or model is None:
            return replace(self._planned(args, context, before), acp_agent=acp_agent)
        if context.by_user:
            raise SpawnRefused("error", refusal)
        plan = self._planned(replace(args, model=None), context, before)
        warning = f'Model "{quoted(model)}" is not available; running on the default model {plan.model.reference}.'
        return replace(plan, warning=f"{warning} {refusal}", acp_agent=acp_agent)

    def plan(self, args: SpawnArgs, context: SpawnContext) -> SpawnPlan:
        """The validation chain, in the contract's order: the request's own shape, the limits on the requester, the
        target agent, then what the child runs with. The first refusal wins."""
        return self._planned(args, context, self._before_model(args, context))

    def _planned(self, args: SpawnArgs, context: SpawnContext, before: _BeforeModel) -> SpawnPlan:
        """The plan, once the checks before the model passed: the model (built now), thinking and timeout."""
        task, label, mode, cleanup, (target_id, target) = before
        model, thinking, timeout = self._run_settings(args, context, target)
        depth = context.requester.depth + 1
        max_depth = self._config.agents.defaults.subagents.max_spawn_depth
        return SpawnPlan(
            agent_id=target_id,
            task=task,
            label=label,
            mode=mode,
            cleanup=cleanup,
            model=model,
            thinking=thinking,
            timeout_seconds=timeout,
            depth=depth,
            role=SessionRole.LEAF if depth >= max_depth else SessionRole.ORCHESTRATOR,
            sandboxed=target.sandboxed,
            thread=args.thread,
        )

    def _before_model(self, args: SpawnArgs, context: SpawnContext) -> _BeforeModel:
        """The chain's checks before the model: shape, limits, target (from the config alone, nothing built)."""
        task, label, mode, cleanup = self._shape(args, context)
        self._check_limits(context)
        return task, label, mode, cleanup, self._target(args, context)

    def _shape(self, args: SpawnArgs, context: SpawnContext) -> tuple[str, str | None, SessionMode, Cleanup]:
        """Check the request's shape: task, label, agent id, mode, cleanup, sandbox, thread binding."""
        try:
            task = checked_text(args.task, what="Task")
        except TextRefused as empty_or_long:
            raise SpawnRefused("error", empty_or_long.words) from None  # every refusal of the policy is a SpawnRefused
        label = args.label.strip()[:MAX_LABEL_CHARS] if args.label and has_visible_text(args.label) else None
        if args.agent_id is not None and not AGENT_ID_PATTERN.match(args.agent_id):
            refused = {"agent": quoted(args.agent_id), "pattern": AGENT_ID_PATTERN.pattern.strip("^$")}
            raise SpawnRefused("error", Words("refused-invalid-agent-id", refused))
        mode = self._mode(args)
        cleanup = Cleanup.KEEP if mode is SessionMode.SESSION else Cleanup(args.cleanup)
        if args.thread and (refusal := binding_gate(context.thread_settings)):
            raise SpawnRefused("error", refusal)
        return task, label, mode, cleanup

    def _check_limits(self, context: SpawnContext) -> None:
        """Check the limits on the requester, in order: depth, then a person's own live sub-agents, then an agent's
        live children, then the lane's queue."""
        defaults = self._config.agents.defaults.subagents
        depth, max_depth = context.requester.depth, defaults.max_spawn_depth
        if depth >= max_depth:
            refused = {"depth": str(depth), "max": str(max_depth)}
            raise SpawnRefused("forbidden", Words("refused-spawn-depth", refused))
        if context.member_limit:  # a person's own spawn, or a main agent's in their turn
            check_member(
                context.member_limit, context.member_active, context.requester.guild_id, None if context.by_user else 0
            )
        if not context.by_user and context.active_children >= defaults.max_children_per_agent:
            raise SpawnRefused(
                "forbidden",
                "sessions_spawn has reached max active children for this session "
                f"({context.active_children}/{defaults.max_children_per_agent})",
            )
        self.check_queue(context.queued)

    def check_queue(self, queued: QueueLoad) -> None:
        """The sub-agent queue's caps, for a spawn, a follow-up and a firing alike (:mod:`bot.core.runs.queue_caps`)."""
        check_queue(self._config.agents.defaults.subagents, queued)

    def _target(self, args: SpawnArgs, context: SpawnContext) -> tuple[str, AgentConfig]:
        """Which agent the child runs: required, allowed, configured, and sandboxed when it must be."""
        agents = self._config.agents
        requester = context.requester
        requester_agent = agents.list.get(requester.agent_id, AgentConfig())
        require_agent_id = _first(
            requester_agent.subagents.require_agent_id, agents.defaults.subagents.require_agent_id
        )
        if args.agent_id is None and require_agent_id and not context.by_user:
            raise SpawnRefused(
                "error",
                "sessions_spawn requires explicit agentId when requireAgentId is configured. "
                "Use agents_list to see allowed agent ids.",
            )
        target_id = args.agent_id or requester.agent_id
        if not context.by_user and target_id != requester.agent_id:
            allowed = self.allowed_targets(requester.agent_id)
            if "*" not in allowed and target_id not in allowed:
                listed = ", ".join(a for a in allowed if a != requester.agent_id) or "none"
                raise SpawnRefused("forbidden", f"agentId is not allowed for sessions_spawn (allowed: {listed})")
        target = agents.list.get(target_id)
        if target is None:
            refused = {"agent": target_id, "configured": ", ".join(sorted(agents.list))}
            raise SpawnRefused("error", Words("refused-unknown-agent-id", refused))
        if not target.enabled:
            raise SpawnRefused("forbidden", Words("refused-agent-disabled", {"agent": target_id}))
        if requester.sandboxed and not target.sandboxed:
            raise SpawnRefused(
                "forbidden",
                "Sandboxed sessions cannot spawn unsandboxed subagents. "
                "Set a sandboxed target agent or use the same agent runtime.",
            )
        if args.sandbox == "require" and not target.sandboxed:
            raise SpawnRefused(
                "forbidden",
                'sessions_spawn sandbox="require" needs a sandboxed target runtime. '
                'Pick a sandboxed agentId or use sandbox="inherit".',
            )
        return target_id, target

    def _run_settings(
        self, args: SpawnArgs, context: SpawnContext, target: AgentConfig
    ) -> tuple[ResolvedModel, str | None, int]:
        """Model, thinking level and timeout: explicit, then the target's, then the defaults, then the caller's."""
        agents = self._config.agents
        defaults = agents.defaults.subagents
        caller = context.requester_run
        model = self._resolve(
            _first(
                args.model,
                target.subagents.model,
                defaults.model,
                target.model,
                caller.model if caller else None,
                agents.list.get(context.requester.agent_id, AgentConfig()).model,
                agents.defaults.model,
            )
        )
        thinking = self._thinking(
            _first(args.thinking, target.subagents.thinking, defaults.thinking, caller.thinking if caller else None),
            model,
            explicit=args.thinking is not None,
        )
        timeout = _first(
            max(0, math.floor(args.run_timeout_seconds)) if args.run_timeout_seconds is not None else None,
            target.subagents.run_timeout_seconds,
            defaults.run_timeout_seconds,
        )
        return model, thinking, timeout

    def allowed_targets(self, requester_agent_id: str) -> list[str]:
        """Agent ids a session of ``requester_agent_id`` may spawn (``*`` means any enabled one); always itself."""
        agent = self._config.agents.list.get(requester_agent_id, AgentConfig())
        allowed = _first(agent.subagents.allow_agents, self._config.agents.defaults.subagents.allow_agents)
        return [requester_agent_id, *(a for a in allowed if a != requester_agent_id)]

    @staticmethod
    def _mode(args: SpawnArgs) -> SessionMode:
        if args.mode is not None and args.mode not in tuple(SessionMode):
            raise SpawnRefused("error", f'Invalid mode "{quoted(args.mode)}". Use "run" or "session".')
        if args.cleanup not in tuple(Cleanup):
            raise SpawnRefused("error", f'Invalid cleanup "{quoted(args.cleanup)}". Use "keep" or "delete".')
        if args.sandbox not in ("inherit", "require"):
            raise SpawnRefused("error", f'Invalid sandbox "{quoted(args.sandbox)}". Use "inherit" or "require".')
        mode = SessionMode(args.mode or (SessionMode.SESSION if args.thread else SessionMode.RUN))
        if mode is SessionMode.SESSION and not args.thread:
            raise SpawnRefused(
                "error", 'mode="session" requires thread=true so the subagent can stay bound to a thread.'
            )
        return mode

    def _resolve(self, reference: str) -> ResolvedModel:
        try:
            return self._models.resolve(reference)
        except UnknownModelError as exc:
            raise SpawnRefused("error", str(exc)) from None

    @staticmethod
    def _thinking(level: str | None, model: ResolvedModel, *, explicit: bool) -> str | None:
        if level is None:
            return None
        if level not in THINKING_LEVELS:
            raise SpawnRefused(
                "error", f'Invalid thinking level "{quoted(level)}". Use one of: {", ".join(THINKING_LEVELS)}.'
            )
        if level != "off" and not model.supports_thinking:
            if not explicit:
                return None
            provider = model.reference.partition("/")[0]
            refused = {"model": quoted(model.reference), "provider": provider}
            raise SpawnRefused("error", Words("refused-no-thinking", refused))
        return level
