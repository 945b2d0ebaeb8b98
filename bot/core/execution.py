"""Execution: the supervisor that starts runs, the lanes they wait in, the runner call, the run inbox (steers
in, taken out as a prompt) and cancellation.

Runs execute in tasks created by the supervisor task (never inside a caller's tool call), so a child never
inherits its parent's deadline or cancellation. How a turn ends is settlement's business; what must happen after
its commit is handed to ``apply``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Sequence
from dataclasses import replace

import structlog
from pydantic_ai import CancellationToken
from pydantic_ai.messages import ModelMessage
from pydantic_ai.tools import DeferredToolResults

from bot.agents.journal import JournaledModel
from bot.agents.metering import MeteredModel
from bot.agents.models import ModelFactory
from bot.agents.runner import NO_OUTPUT, RunOutcome, RunRequest, describe_failure, run_agent
from bot.config import Config
from bot.core import internal_context
from bot.core.approvals import Approvals
from bot.core.budgets import Budgets
from bot.core.durable_runs import DurableRuns, step, step_key
from bot.core.mcp_tools import McpTools
from bot.core.policy_envelope import PolicyEnvelopes
from bot.core.prompts import subagent_context
from bot.core.run_lanes import RunLanes
from bot.core.session_toolset import Caller, SessionControl, ToolDeps, session_toolset
from bot.core.settlement import AfterCommit, Settlement, TurnEnd
from bot.core.signals import Signals
from bot.core.tool_gates import tool_gate
from bot.core.tool_policy import offered_tools, usable_tools
from bot.core.turn_journal import TurnMessages, turn_start
from bot.records import Delegation, Run, RunStatus, Session, SessionKind, Usage, short_run_id
from storage.repositories import Repositories

log = structlog.get_logger(__name__)
_DELEGATES = (Delegation.BOUNDED, Delegation.INDEPENDENT)  # their agentic loop stops at max_tool_iterations
Prompt = str | DeferredToolResults  # a turn starts from a prompt, or from people's decisions on its paused calls


class Execution:
    def __init__(
        self,
        config: Config,
        repos: Repositories,
        models: ModelFactory,
        settlement: Settlement,
        signals: Signals,
        tools: SessionControl,
        mcp: McpTools,
        approvals: Approvals,
        budgets: Budgets,
        apply: Callable[[AfterCommit], None],
        clock: Callable[[], float],
        durable: DurableRuns | None = None,
    ) -> None:
        self._config = config
        self._repos = repos
        self._models = models
        self._settlement = settlement
        self._signals = signals
        self._tools = tools
        self._mcp = mcp
        self._approvals = approvals
        self._budgets = budgets
        self._envelopes = PolicyEnvelopes(config, repos)
        self._apply = apply
        self._clock = clock
        self._lanes = RunLanes(config, repos, signals)
        self._pending: asyncio.Queue[tuple[str, bool]] = asyncio.Queue()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._cancellations: dict[str, CancellationToken] = {}
        self._supervisor: asyncio.Task[None] | None = None
        self._durable = durable
        self._started = asyncio.Event()  # recovered workflows wait for the start

    async def launch(self) -> set[str]:
        """Launch durable runs (if on); the ids of the runs whose workflows they resume."""
        return await self._durable.launch(self._resume) if self._durable is not None else set()

    def start(self) -> None:
        self._supervisor = asyncio.create_task(self._supervise(), name="orchestrator-supervisor")
        self._started.set()

    async def close(self) -> None:
        """Stop the supervisor and every run task; runs still live stay live in the database and are settled at
        next start."""
        tasks = [t for t in (self._supervisor, *self._tasks.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self._supervisor = None
        if self._durable is not None:
            await self._durable.close()

    async def wait_idle(self) -> None:
        """Wait until no run is queued or executing in this process."""
        while self._tasks or not self._pending.empty():
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
            await asyncio.sleep(0)

    def queue(self, run_id: str) -> None:
        """Start a run that was just persisted as queued."""
        self._pending.put_nowait((run_id, False))

    def wake(self, run_id: str) -> None:
        """Resume a run that settlement moved from waiting back to running."""
        self._pending.put_nowait((run_id, True))

    def cancel(self, run_id: str) -> None:
        """Stop the turn in flight of a run that was killed (if this process runs one), or take it out of the
        sub-agent lane's queue, so the runs behind it move up at once."""
        token = self._cancellations.get(run_id)
        if token is not None:
            token.cancel()
        if self._lanes.subagents.withdraw(run_id):
            self._tasks[run_id].cancel()

    def queue_places(self) -> dict[str, int]:
        """Run id → place in the sub-agent lane's queue (1 starts next), in the lane's fair order."""
        return {run_id: place for place, run_id in enumerate(self._lanes.subagents.order(), start=1)}

    async def steer(self, run_id: str, message: str) -> bool:
        """Queue a message for a live run; it reaches the model at the run's next request (``AgentRun.enqueue``),
        or, for a run waiting on its children, with their results. False if the run ended meanwhile."""
        async with self._repos.db.transaction() as tx:
            steered = await self._repos.inbox.add_steer(tx, run_id=run_id, content=message, now=self._clock())
        log.info("run_steered" if steered else "steer_too_late", run_id=run_id)
        return steered

    async def take_inbox(self, run_id: str, *, wake: bool) -> str | None:
        """Consume the run's pending inbox as one prompt (steers as they are, completions in one internal block)."""
        async with self._repos.db.transaction() as tx:
            items = await self._repos.inbox.take_pending(tx, run_id, self._clock(), taker=step_key())
        if not items:
            return None
        steers = [content for source, content in items if source is None]
        events = [content for source, content in items if source is not None]
        parts = steers + ([internal_context.wrap(events, wake=wake)] if events else [])
        return "\n\n".join(parts)

    async def _supervise(self) -> None:
        while True:
            run_id, wake = await self._pending.get()
            body = self._durable.run(run_id, wake=wake) if self._durable else self._execute(run_id, wake=wake)
            self._track(run_id, asyncio.create_task(body, name=f"run-{short_run_id(run_id)}"))

    def _track(self, run_id: str, task: asyncio.Task[None]) -> None:
        self._tasks[run_id] = task
        task.add_done_callback(functools.partial(self._forget, run_id))

    async def _resume(self, run_id: str, wake: bool) -> None:
        """A run's or a wake's workflow body: started in this process, or recovered by DBOS (then tracked here too)."""
        task = asyncio.current_task()
        if run_id not in self._tasks and task is not None:
            self._track(run_id, task)
        await self._started.wait()
        await self._execute(run_id, wake=wake, durable=True)

    async def _own(self, run_id: str) -> None:
        """This process executes the run now: if it dies, a live one resumes or settles the run."""
        async with self._repos.db.transaction() as tx:
            await self._repos.runs.own(tx, run_id)

    def _forget(self, run_id: str, _task: asyncio.Task[None]) -> None:
        self._tasks.pop(run_id, None)

    async def _execute(self, run_id: str, *, wake: bool, durable: bool = False) -> None:
        run = await self._repos.runs.get(run_id)
        queued = {RunStatus.QUEUED, RunStatus.RUNNING} if durable else {RunStatus.QUEUED}  # a workflow may be resumed
        if run is None or run.status not in ({RunStatus.RUNNING} if wake else queued):
            return
        if wake or durable:  # maybe a dead process's run resumed here, or woken by a child that settled here
            await self._own(run_id)
        session = await self._repos.sessions.get(run.session_key)
        assert session is not None, f"run {run_id} has no session"
        spawned = {"spawn_site": session.spawn_site} if session.spawn_site else {}
        with structlog.contextvars.bound_contextvars(
            run_id=run.id,
            session_key=session.key,
            agent_id=session.agent_id,
            agent_alias=session.agent_id,  # ZeroClaw's name for it
            depth=session.depth,
            **spawned,
        ):
            async with await self._lanes.lane(run, session):
                try:
                    prompt = await self._first_prompt(run, session, wake)
                    while prompt is not None:
                        outcome = await self._run_turn(run, session, prompt)
                        if outcome.status is RunStatus.AWAITING_APPROVAL:  # paused: a decision wakes it
                            self._apply(await self._approvals.pause(run, session, outcome))
                            break
                        prompt = await self._next_prompt(run, await self._settlement.end_turn(run, session, outcome))
                        self._signals.run_changed(run.id)
                except Exception as crash:  # the model call's own failures are outcomes; this is everything else
                    log.exception("run_crashed")
                    self._apply(await self._settlement.crashed(run, session, describe_failure(crash)))

    async def _first_prompt(self, run: Run, session: Session, wake: bool) -> Prompt | None:
        """A woken run's decisions on its paused calls, else its inbox; or a queued run's task once it is marked
        running (``None``: nothing to do)."""
        if wake:
            decided = await step("approvals.take", self._approvals.take_decisions, run.id)
            prompt: Prompt | None = decided or await step("inbox.take", self.take_inbox, run.id, wake=True)
            if prompt is None:
                log.warning("wake_without_messages")
                outcome = RunOutcome(RunStatus.COMPLETED, run.result_text or NO_OUTPUT, None, run.usage, [])
                return await self._next_prompt(run, await self._settlement.end_turn(run, session, outcome))
            return prompt
        if not await step("run.start", self._mark_running, run.id):
            return None
        log.info("run_started", model=run.model)
        self._signals.run_changed(run.id)
        return run.task

    async def _mark_running(self, run_id: str) -> bool:
        """Queued → running; in a workflow, also true for a run it had marked before its step was recorded."""
        async with self._repos.db.transaction() as tx:
            started = await self._repos.runs.mark_running(tx, run_id, self._clock())
            await self._repos.runs.own(tx, run_id)
        current = await self._repos.runs.get(run_id)
        return started or (self._durable is not None and current is not None and current.status is RunStatus.RUNNING)

    async def _next_prompt(self, run: Run, ended: TurnEnd) -> str | None:
        """Apply what the settled turn asks for; then the inbox for another turn, or ``None``."""
        if ended.after is not None:
            self._apply(ended.after)
        return await step("inbox.take", self.take_inbox, run.id, wake=True) if ended.again else None

    async def _offered(self, session: Session) -> frozenset[str]:
        """The session's tools; a bounded delegate's never exceed its caller's."""
        if session.delegation is not Delegation.BOUNDED:
            return offered_tools(self._config, session)
        caller = await self._repos.sessions.get(session.requester_session_key or "")
        ceiling = usable_tools(self._config, caller, await self._offered(caller)) if caller else frozenset()
        return offered_tools(self._config, session, ceiling)

    async def _run_turn(self, run: Run, session: Session, prompt: Prompt) -> RunOutcome:
        agent = self._config.agents.list[session.agent_id]
        system_prompt = agent.system_prompt or self._config.agents.defaults.system_prompt
        if session.kind == SessionKind.SUBAGENT:
            system_prompt += "\n\n" + subagent_context(session, self._config.agents.defaults.subagents.max_spawn_depth)
        runtime = self._config.runtime_profile_of(session.agent_id)
        toolset = session_toolset(await self._offered(session))
        start = await step("turn.start", turn_start, self._repos, run.id, session.key, run.usage)
        before, stored = start.usage, TurnMessages(self._repos, run.id, start)

        async def persist(messages: Sequence[ModelMessage], turn: Usage) -> None:
            new = await stored.unstored(messages)
            async with self._repos.db.transaction() as tx:
                await self._repos.transcripts.append(tx, session.key, run.id, new)
                await self._repos.runs.record_usage(tx, run.id, before.then(turn))
                warned = await self._budgets.record(tx, run, session, new)
            if warned:
                self._signals.outbox_changed()
            self._signals.progressed()
            self._signals.run_changed(run.id)

        async def drain() -> list[str]:
            text = await step("inbox.take", self.take_inbox, run.id, wake=False)
            return [text] if text else []

        request = RunRequest(
            prompt=prompt,
            system_prompt=system_prompt,
            model=JournaledModel(
                MeteredModel(self._models.chain(run.model, agent=session.agent_id), self._budgets.meter(run, session))
            ),
            history=await self._repos.transcripts.history(session.key, start.history_rows),
            thinking=run.thinking,
            timeout_seconds=run.timeout_seconds,
            toolsets=([toolset] if toolset else []) + await self._mcp.toolsets(session),
            deps=ToolDeps(control=self._tools, caller=Caller(session=session, run_id=run.id)),
            parallel_tools=bool(runtime.parallel_tools),
            request_limit=runtime.tool_iterations if session.delegation in _DELEGATES else None,
            dedup_exempt=frozenset(runtime.tool_call_dedup_exempt),
            gate=tool_gate(await self._envelopes.effective(session, run)),
        )
        token = self._cancellations.setdefault(run.id, CancellationToken())
        try:
            # A main turn is not redirected by results that arrive meanwhile (they are already posted for
            # people); they join its session's history when it ends. A sub-agent reads its inbox at every step.
            inbox = drain if session.kind == SessionKind.SUBAGENT else None
            outcome = await run_agent(request, on_step=persist, drain=inbox, cancellation=token)
        finally:
            self._cancellations.pop(run.id, None)
        return replace(outcome, usage=before.then(outcome.usage))
