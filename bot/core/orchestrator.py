"""The orchestrator: the façade that builds the core's rooms, starts and closes them, and keeps the public
methods the cogs, the Discord adapter and the tests call.

A run goes spawn → persist (queued) → lane → running → (waiting on children) → terminal, crash-safe: every state
change is written to the database before anything relies on it. Where each step lives:

- ``runs.spawning`` — new sessions and runs, persisted and queued (policy: ``runs.spawn_policy``;
  what callers send and get back: ``runs.requests``);
- ``runs.execution`` — supervisor, lanes, the runner call, inbox, cancellation;
- ``runs.settlement`` — terminal transitions and where results go, exactly once (the state machine), with
  ``runs.results`` writing what a result becomes;
- ``threads.bindings``, ``threads.archiving`` — a session's thread, and its end;
- ``tools.agent_tools`` — the session tools for agents; ``runs.run_actions``, ``runs.run_authority``
  — checks, and who may act on a run (shared with people's commands); ``tools.subagent_spawn``,
  ``tools.delegation`` (``tools.delegate_tasks``) — ``spawn_subagent``, ``delegate`` (one action budget);
- ``budgets.meter`` — caps on runs, tokens and cost per member, server and agent, checked when a run is
  admitted and before each model request (per-server values: ``budgets.limits``, exposed as
  :attr:`Orchestrator.budget_limits`);
- :mod:`bot.core.schedules` — scheduled agent jobs, each firing a top-level run exactly once (exposed as
  :attr:`Orchestrator.schedules`);
- ``people.usage_report`` — what a member spent and the caps they count against, for ``/usage`` (exposed as
  :attr:`Orchestrator.usage_reports`);
- :mod:`bot.core.retention` — passes that prune what ``[retention]`` lets go; ``durable.executors`` — this
  process among several on one store (executor id, heartbeat, the janitor that hands a dead one's runs on);
- :mod:`bot.core.signals` — listeners, progress, background work; :mod:`bot.core.errors`, :mod:`bot.core.limits`.
Settlement returns what must happen after its commit as an :class:`AfterCommit`; :meth:`Orchestrator._apply` does it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from bot.agents.mcp_servers import McpServers
from bot.agents.models import ModelFactory
from bot.config import Config
from bot.core.budgets.limits import BudgetLimits
from bot.core.budgets.meter import Budgets
from bot.core.durable.durable_runs import DurableRuns
from bot.core.durable.executors import Executors
from bot.core.errors import UserError
from bot.core.guild_settings import GuildSettings
from bot.core.people.tool_report import ToolReports
from bot.core.people.usage_report import UsageReports
from bot.core.retention import Retention
from bot.core.runs.execution import Execution
from bot.core.runs.requests import ChatRequest, SpawnAccepted, SpawnRequest
from bot.core.runs.results import Results
from bot.core.runs.run_authority import RunAuthority
from bot.core.runs.session_queries import SessionQueries
from bot.core.runs.settlement import AfterCommit, Settlement
from bot.core.runs.spawn_policy import SpawnArgs, SpawnPolicy
from bot.core.runs.spawning import Spawning
from bot.core.schedules import Schedules
from bot.core.signals import Signals
from bot.core.threads.archiving import Archiving
from bot.core.threads.bindings import Heard, ThreadBindings
from bot.core.threads.port import ThreadPort
from bot.core.timers import Timers
from bot.core.tools.action_budget import ActionBudget
from bot.core.tools.agent_tools import AgentTools
from bot.core.tools.approvals import Approvals
from bot.core.tools.delegate_reach import roster
from bot.core.tools.delegate_records import DelegateRecords
from bot.core.tools.delegate_tasks import DelegateTasks
from bot.core.tools.delegation import Delegating
from bot.core.tools.mcp_tools import McpTools
from bot.core.tools.session_toolset import Caller
from bot.core.tools.subagent_spawn import SubagentSpawn
from bot.records import Binding, Cleanup, Origin, Run, Session
from bot.redaction import Redactor
from storage.db import Database
from storage.repositories import Repositories

T = TypeVar("T")


class Orchestrator:
    def __init__(
        self,
        config: Config,
        db: Database,
        models: ModelFactory,
        *,
        threads: ThreadPort | None = None,
        clock: Callable[[], float] = time.time,
        repos: Repositories | None = None,
        channel_conversation: Callable[[int], str] | None = None,
        mcp_servers: McpServers | None = None,
        durable: DurableRuns | None = None,
        shards: str | None = None,
        redact: Redactor | None = None,
    ) -> None:
        redact = redact or Redactor.of(config)  # the secrets the config names, read from the environment now
        apply = self._apply
        repos = repos or Repositories.over(db, config.durability.executor_id)
        self._config = config
        self._db = repos.db
        self._threads = threads
        # The repositories, for tests and tools that inspect state; the bot's own objects get theirs from app.py.
        self.sessions, self.runs, self.transcripts = repos.sessions, repos.runs, repos.transcripts
        self.outbox, self.inbox, self.bindings = repos.outbox, repos.inbox, repos.bindings
        self.guild_settings = settings = GuildSettings(config, repos.db, repos.guild_settings, repos.audit, clock=clock)
        self._signals = signals = Signals(clock)
        self._timers = Timers()
        policy = SpawnPolicy(config, models)
        self._archiving = Archiving(config, repos, self._timers, clock)
        records, results = DelegateRecords(repos, clock), Results(repos, config.tools.result_max_bytes)
        self._settlement = settlement = Settlement(repos, self._archiving, results, records, clock)
        bindings = ThreadBindings(repos, threads, self.guild_settings, self._archiving, self._timers, self, clock)
        self._thread_bindings, self.steer_limit = bindings, bindings.steer_limit  # /subagents steer counts with it
        # Execution and thread bindings reach spawning and the agent tools through this façade, built after them.
        mcp_servers = mcp_servers or McpServers(config.mcp.servers, clock=clock)
        self.tool_reports = ToolReports(config, mcp_servers)
        mcp = McpTools(config, repos, mcp_servers, redact)
        self.approvals = approvals = Approvals(config, repos, self._timers, apply, clock, redact)
        self.budget_limits = BudgetLimits(config, repos, clock)
        self.budgets = budgets = Budgets(config, repos, self.budget_limits, clock)
        self.usage_reports = UsageReports(config, repos, budgets, clock)
        self._execution = Execution(  # with ``durable``, runs are DBOS workflows that resume after a restart
            config, repos, models, settlement, signals, self, mcp, approvals, budgets, apply, clock, durable, redact
        )
        dispatch, delegated = self._execution.dispatch, repos.delegate_tasks
        self._executors = Executors(config.durability, repos, settlement, apply, clock, shards, dispatch)
        places = dispatch.lane_places
        self.queries = SessionQueries(repos.sessions, repos.runs, repos.transcripts, delegated, clock, places)
        self._spawning = Spawning(
            config, repos, models, policy, settings, self._thread_bindings, self._execution, budgets, signals, clock
        )
        self.authority = authority = RunAuthority(repos, clock)
        self._tools = AgentTools(config, repos, self.queries, policy, self._spawning, self, authority)
        budget = ActionBudget(config, repos, clock)
        self._subagent_spawn = SubagentSpawn(config, repos, self._spawning, self._signals, budget, clock)
        tasks = DelegateTasks(repos, records, self._timers, self._signals, self.kill, clock, authority)
        self._delegate_tasks = tasks
        self._delegating = Delegating(config, repos, self._spawning, tasks, self._signals, budget, clock)
        self.schedules = Schedules(
            config, repos, models, self._timers, self._spawning, clock, channel_conversation=channel_conversation
        )
        self._retention = Retention(config.retention, repos.retention, self._timers, self._signals, clock, durable)

    # -- lifecycle -------------------------------------------------------------------------------------------

    def add_run_listener(self, listener: Callable[[str], None]) -> None:
        """Called with a run id whenever that run changes (queued, started, a step, settled, killed)."""
        self._signals.add_run_listener(listener)

    def add_outbox_listener(self, listener: Callable[[], None]) -> None:
        """Called after every transaction that added outbox rows (the delivery worker wakes on it)."""
        self._signals.add_outbox_listener(listener)

    async def start(self) -> None:
        """Resume or settle what a previous process left behind, rebuild timers, then start taking work."""
        await self._executors.start(self._execution.launch)
        self._timers.start()
        await asyncio.gather(self._archiving.start(), self.approvals.start(), self._delegate_tasks.start())
        await self._thread_bindings.start()
        self._execution.start()
        await self.schedules.start()
        self._retention.start()

    async def close(self) -> None:
        """Stop every task; runs still live stay live in the database and are settled at next start."""
        self._timers.shutdown()
        await asyncio.gather(self._execution.dispatch.close(), self._signals.close(), self._thread_bindings.close())
        await self._executors.close()

    async def wait_idle(self) -> None:
        """Wait until no run is queued or executing in this process."""
        await self._execution.dispatch.wait_idle()

    def _apply(self, after: AfterCommit) -> None:
        """The one place where what a committed settlement asks for happens."""
        for run_id in after.cancel:
            self._execution.cancel(run_id)
        for run_id in after.wake:
            self._execution.dispatch.wake(run_id)
        for run_id in after.queue:
            self._execution.dispatch.queue(run_id)
        for run_id in after.changed:
            self._signals.run_changed(run_id)
        for when in after.archive_at:
            self._archiving.scheduled(when)
        for session_key in after.archive_now:
            self._signals.background(self._archiving.archive(session_key))
        for run_id in after.ended:
            self._signals.background(self._thread_bindings.end_run_bindings(run_id))
        if after.outbox:
            self._signals.outbox_changed()
        self._signals.progressed()

    # -- what people ask for ---------------------------------------------------------------------------------

    def spawn(self, request: SpawnRequest) -> Coroutine[Any, Any, SpawnAccepted]:
        """The spawn itself, with no frame of its own here: a burst of spawns waits holding less."""
        return self._spawning.spawn(request)

    async def chat(self, request: ChatRequest) -> str:
        return await self._spawning.chat(request)

    async def follow_up(
        self,
        session: Session,
        message: str,
        previous: Run | None,
        parent_run_id: str | None = None,
        origin: Origin | None = None,
    ) -> str:
        return await self._spawning.follow_up(session, message, previous, parent_run_id, origin)

    async def kill(self, run_id: str) -> list[Run]:
        """Stop a run and, cascading, every live run below it (deepest first). Killed runs announce nothing."""
        stopped, after = await self._settlement.kill(run_id)
        if stopped:
            self._apply(after)
            await self.approvals.runs_ended([run.id for run in stopped])
        return stopped

    async def steer(self, run_id: str, message: str) -> bool:
        return await self._execution.steer(run_id, message)

    async def wait_for(self, check: Callable[[], Awaitable[T | None]], timeout: float) -> T | None:
        return await self._signals.wait_for(check, timeout)

    async def bind(self, binding: Binding) -> None:
        await self._thread_bindings.bind(binding)

    async def unbind(self, thread_id: int, *, farewell: str | None = None) -> bool:
        return await self._thread_bindings.unbind(thread_id, farewell=farewell)

    async def thread_message(self, thread_id: int, text: str, origin: Origin, *, mod: bool = False) -> Heard | None:
        return await self._thread_bindings.route_message(thread_id, text, origin, is_moderator=mod)

    async def reconcile_bindings(self) -> None:
        await self._thread_bindings.reconcile()

    async def announcement_delivered(self, run_id: str) -> None:
        """The delivery worker is done with a run's announcement (posted it, or gave up and told the requester):
        a run-mode thread's binding ends now, and then a ``cleanup: delete`` session is archived."""
        run = await self.runs.get(run_id)
        session = await self.sessions.get(run.session_key) if run else None
        if session is None:
            return
        await self._thread_bindings.end_run_bindings(run_id)
        if session.cleanup == Cleanup.DELETE:
            await self._archiving.archive(session.key)

    @property
    def default_agent(self) -> str:
        return self._config.agents.default_agent

    @property
    def threads(self) -> ThreadPort:
        if self._threads is None:
            raise UserError("Thread bindings are unavailable: no chat adapter can create threads.")
        return self._threads

    # -- what agents ask for (SessionControl) ----------------------------------------------------------------

    async def tool_spawn(self, caller: Caller, args: SpawnArgs) -> dict[str, Any]:
        return await self._tools.tool_spawn(caller, args)

    async def tool_agents_list(self, caller: Caller) -> dict[str, Any]:
        return await self._tools.tool_agents_list(caller)

    async def tool_sessions_list(self, caller: Caller) -> dict[str, Any]:
        return await self._tools.tool_sessions_list(caller)

    async def tool_sessions_history(
        self, caller: Caller, session_key: str, limit: int, include_tools: bool
    ) -> dict[str, Any]:
        return await self._tools.tool_sessions_history(caller, session_key, limit, include_tools)

    async def tool_sessions_send(self, caller: Caller, session_key: str, message: str) -> dict[str, Any]:
        return await self._tools.tool_sessions_send(caller, session_key, message)

    async def tool_subagents(
        self, caller: Caller, action: str, target: str | None, message: str | None
    ) -> dict[str, Any]:
        return await self._tools.tool_subagents(caller, action, target, message)

    async def tool_model_switch(self, caller: Caller, model: str) -> dict[str, Any]:
        return await self._tools.tool_model_switch(caller, model)

    async def tool_spawn_subagent(self, caller: Caller, prompt: object) -> dict[str, Any]:
        return await self._subagent_spawn.spawn(caller, prompt)

    async def tool_delegate(self, caller: Caller, raw: dict[str, Any]) -> dict[str, Any]:
        return await self._delegating.handle(caller, raw)

    def delegate_roster(self, caller: Caller) -> list[str]:
        return roster(self._config, caller.session.agent_id)
