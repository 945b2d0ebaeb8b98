"""Builds every room of the core, in order, each with only what it needs.

Nothing here acts: it is the one place where the wings meet. A room gets the rooms it calls (or a port the engine
defines, implemented by another wing), never the object that built it. The order follows the arrows: a room is
built after everything it calls; the one loop (the launcher starts runs whose body is execution, built later) is
closed by registration at start, in :meth:`Core.start`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from opentelemetry.trace import TracerProvider

from bot.agents.acp_client import AcpAgents
from bot.agents.mcp_servers import McpServers
from bot.agents.models import ModelFactory
from bot.config import Config
from bot.core.budgets.limits import BudgetLimits
from bot.core.budgets.meter import Budgets
from bot.core.context import CoreContext
from bot.core.drafts.live_answers import LiveAnswers
from bot.core.drafts.port import DraftPort
from bot.core.durable.dispatch import RunDispatch
from bot.core.durable.durable_runs import DurableRuns
from bot.core.durable.executors import Executors
from bot.core.durable.lane_places import LanePlaces
from bot.core.durable.run_queues import RunQueues
from bot.core.durable.store_steps import StoreSteps
from bot.core.files.attached_files import AttachedFiles
from bot.core.guild_settings import GuildSettings
from bot.core.harness.acp_turns import AcpTurns
from bot.core.jobs.retention import Retention
from bot.core.jobs.schedules import Schedules
from bot.core.memory.memories import Memories
from bot.core.memory.memory_control import MemoryControl
from bot.core.memory.memory_tools import MemoryTurns
from bot.core.memory.scope import MemoryScopes
from bot.core.oversight.run_authority import RunAuthority
from bot.core.oversight.session_queries import SessionQueries
from bot.core.people.binding_control import BindingControl
from bot.core.people.control import RunControl
from bot.core.people.schedule_control import ScheduleControl
from bot.core.people.tool_report import ToolReports
from bot.core.people.usage_report import UsageReports
from bot.core.run_traces import RunTraces
from bot.core.runs.commands import RunCommands
from bot.core.runs.effects import Cancellations, Effects
from bot.core.runs.execution import Execution
from bot.core.runs.results import Results
from bot.core.runs.run_lanes import RunLanes
from bot.core.runs.settlement import Settlement
from bot.core.runs.spawn_policy import SpawnPolicy
from bot.core.runs.spawning import Spawning
from bot.core.signals import Signals
from bot.core.threads.archiving import Archiving
from bot.core.threads.bindings import ThreadBindings
from bot.core.threads.messages import ThreadMessages
from bot.core.threads.port import ThreadPort
from bot.core.threads.steer_limit import SteerLimit
from bot.core.timers import Timers
from bot.core.tools.action_budget import ActionBudget
from bot.core.tools.agent_tools import AgentTools
from bot.core.tools.approvals import Approvals
from bot.core.tools.delegate_records import DelegateRecords
from bot.core.tools.delegate_tasks import DelegateTasks
from bot.core.tools.delegation import Delegating
from bot.core.tools.mcp_tools import McpTools
from bot.core.tools.policy_envelope import PolicyEnvelopes
from bot.core.tools.session_control import ToolControl
from bot.core.tools.subagent_spawn import SubagentSpawn
from bot.core.tools.turn_setup import TurnSetups
from bot.redaction import Redactor
from storage.repositories import Repositories


@dataclass(frozen=True)
class Core:
    """Every room of the core, built and wired; started and closed as one."""

    ctx: CoreContext
    guild_settings: GuildSettings
    archiving: Archiving
    settlement: Settlement
    dispatch: RunDispatch
    effects: Effects
    bindings: ThreadBindings
    messages: ThreadMessages
    steer_limit: SteerLimit
    approvals: Approvals
    budget_limits: BudgetLimits
    budgets: Budgets
    usage_reports: UsageReports
    tool_reports: ToolReports
    spawning: Spawning
    commands: RunCommands
    queries: SessionQueries
    authority: RunAuthority
    delegate_tasks: DelegateTasks
    tools: ToolControl
    execution: Execution
    harness: AcpTurns
    executors: Executors
    schedules: Schedules
    retention: Retention
    control: RunControl
    binding_control: BindingControl
    schedule_control: ScheduleControl
    memory_control: MemoryControl

    async def start(self) -> None:
        """Resume or settle what a previous process left, rebuild timers, then take work."""
        execute = self.execution.execute
        await self.executors.start(lambda: self.dispatch.launch(execute))
        self.ctx.timers.start()
        await asyncio.gather(self.archiving.start(), self.approvals.start(), self.delegate_tasks.start())
        await self.bindings.start()
        self.dispatch.start()
        await self.schedules.start()
        self.retention.start()

    async def close(self) -> None:
        """Stop every task; runs still live stay live in the database and are settled at next start."""
        self.ctx.timers.shutdown()
        await asyncio.gather(self.dispatch.close(), self.ctx.signals.close(), self.bindings.close())
        await self.executors.close()
        await self.harness.close()


def build(
    config: Config,
    repos: Repositories,
    models: ModelFactory,
    *,
    threads: ThreadPort | None = None,
    drafts: DraftPort | None = None,
    clock: Callable[[], float] = time.time,
    channel_conversation: Callable[[int], str] | None = None,
    mcp_servers: McpServers | None = None,
    durable: DurableRuns | None = None,
    shards: str | None = None,
    redact: Redactor | None = None,
    tracer_provider: TracerProvider | None = None,
) -> Core:
    """Every room, in the order of the arrows between them.

    ``tracer_provider``: the bot's, when ``[tracing]`` is on (runs' spans, pydantic-ai's)."""
    redact = redact or Redactor.of(config)  # the secrets the config names, read from the environment now
    ctx = CoreContext(config, repos, clock, Signals(clock), Timers(), redact)
    mcp_servers = mcp_servers or McpServers(config.mcp.servers, clock=clock)
    settings = GuildSettings(ctx)
    policy = SpawnPolicy(config, models)
    envelopes = PolicyEnvelopes(ctx)
    # the engine's end of a run: settlement, and what its commits ask for
    archiving = Archiving(ctx)
    records = DelegateRecords(ctx)
    lanes = RunLanes(ctx)
    queues = RunQueues(config.agents.defaults.subagents, config.durability.queue_poll_seconds)
    places = LanePlaces(
        repos, config.agents.defaults.subagents, config.durability.executor_id, config.durability.queue_poll_seconds
    )
    dispatch = RunDispatch(repos, lanes.subagents, durable, queues, places)
    bindings = ThreadBindings(ctx, threads, settings, archiving)
    # budgets, and the start of runs (a settled sub-agent's result may start a main-agent turn)
    budget_limits = BudgetLimits(ctx)
    budgets = Budgets(ctx, budget_limits)
    spawning = Spawning(ctx, models, policy, settings, bindings, dispatch, budgets, envelopes)
    settlement = Settlement(ctx, archiving, Results(ctx, budgets, spawning.main_model), records)
    effects = Effects(ctx.signals, dispatch, Cancellations(), archiving, bindings)
    approvals = Approvals(ctx, effects.apply)
    commands = RunCommands(ctx, settlement, effects, spawning, approvals)
    steer_limit = SteerLimit(clock)  # thread messages to a live run count as steers
    messages = ThreadMessages(ctx, bindings.routes, commands, steer_limit)
    # what agents call
    queries = SessionQueries(ctx, dispatch.lane_places)
    authority = RunAuthority(ctx)
    agent_tools = AgentTools(ctx, queries, policy, spawning, commands, authority)
    budget = ActionBudget(ctx)
    scopes = MemoryScopes(ctx)
    subagent_spawn = SubagentSpawn(ctx, spawning, budget, models, scopes)
    tasks = DelegateTasks(ctx, records, commands.kill, authority)
    delegating = Delegating(ctx, spawning, tasks, budget)
    control = ToolControl(config, agent_tools, subagent_spawn, delegating)
    mcp = McpTools(ctx, mcp_servers)
    memories = Memories(ctx, lambda user, guild, channel: authority.moderation.is_moderator(user, guild, channel))
    turns = TurnSetups(
        ctx, control, mcp, envelopes, approvals, budgets, MemoryTurns(ctx, scopes, memories), AttachedFiles(ctx)
    )
    # the engine's run body, and the processes sharing the store
    harness = AcpTurns(ctx, AcpAgents(config.acp_agents), approvals)
    live = LiveAnswers(ctx, settings, drafts)
    traces = RunTraces(tracer_provider, config.tracing)
    execution = Execution(ctx, models, settlement, effects, turns, StoreSteps(repos), lanes, harness, live, traces)
    executors = Executors(ctx, settlement, effects.apply, shards, dispatch)
    schedules = Schedules(ctx, models, spawning, channel_conversation=channel_conversation)
    retention = Retention(ctx, durable)
    # what people do
    run_control = RunControl(ctx, commands, queries, authority, steer_limit)
    return Core(
        ctx=ctx,
        guild_settings=settings,
        archiving=archiving,
        settlement=settlement,
        dispatch=dispatch,
        effects=effects,
        bindings=bindings,
        messages=messages,
        steer_limit=steer_limit,
        approvals=approvals,
        budget_limits=budget_limits,
        budgets=budgets,
        usage_reports=UsageReports(ctx, budgets),
        tool_reports=ToolReports(config, mcp_servers),
        spawning=spawning,
        commands=commands,
        queries=queries,
        authority=authority,
        delegate_tasks=tasks,
        tools=control,
        execution=execution,
        harness=harness,
        executors=executors,
        schedules=schedules,
        retention=retention,
        control=run_control,
        binding_control=BindingControl(ctx, run_control, settings, bindings, threads),
        schedule_control=ScheduleControl(ctx, schedules),
        memory_control=MemoryControl(ctx),
    )
