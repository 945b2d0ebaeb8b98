"""Execution: a run's turns from its first prompt to its end, the runner call, the run inbox (steers in, taken out
as a prompt) and cancellation. Where and when a run starts is :mod:`bot.core.runs.run_dispatch`'s business; how a turn
ends is settlement's; what must happen after its commit is handed to ``apply``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import replace

import structlog
from dbos._error import DBOSWorkflowCancelledError  # not re-exported by dbos
from pydantic_ai import CancellationToken
from pydantic_ai.messages import ModelMessage
from pydantic_ai.tools import DeferredToolResults

from bot.agents.journal import JournaledModel
from bot.agents.metering import MeteredModel
from bot.agents.models import ModelFactory
from bot.agents.result_caps import ResultLimits
from bot.agents.runner import NO_OUTPUT, RunOutcome, RunRequest, describe_failure, run_agent
from bot.config import Config
from bot.core.budgets.meter import Budgets
from bot.core.durable import store_steps
from bot.core.durable.durable_runs import DurableRuns
from bot.core.durable.run_queues import RunQueues, queue_of
from bot.core.durable.store_steps import store_step
from bot.core.durable.turn_journal import TurnMessages, TurnStart, turn_start
from bot.core.runs import internal_context
from bot.core.runs.prompts import subagent_context
from bot.core.runs.run_dispatch import RunDispatch
from bot.core.runs.run_lanes import RunLanes
from bot.core.runs.settlement import AfterCommit, Settlement, TurnEnd
from bot.core.signals import Signals
from bot.core.tools.approvals import Approvals
from bot.core.tools.mcp_tools import McpTools
from bot.core.tools.policy_envelope import PolicyEnvelopes
from bot.core.tools.session_toolset import Caller, SessionControl, ToolDeps, session_toolset
from bot.core.tools.tool_gates import tool_gate
from bot.core.tools.tool_policy import offered_tools, usable_tools
from bot.records import Delegation, Run, RunStatus, Session, SessionKind, Usage
from bot.redaction import RedactedModel, Redactor
from storage.db import Connection
from storage.repositories import Repositories

log = structlog.get_logger(__name__)
_DELEGATES = (Delegation.BOUNDED, Delegation.INDEPENDENT)  # their agentic loop stops at max_tool_iterations
Prompt = str | DeferredToolResults  # a turn starts from a prompt, or from people's decisions on its paused calls


def _taken(recorded: str) -> list[tuple[str | None, str]]:
    """An inbox take's items as its step recorded them (JSON turns the pairs into lists)."""
    return [(source, content) for source, content in json.loads(recorded)]


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
        durable: DurableRuns | None,
        redact: Redactor,
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
        self._cancellations: dict[str, CancellationToken] = {}
        self._durable = durable
        self._redact = redact  # what a turn stores and says, and tool results before the model reads them
        queues = RunQueues(config.agents.defaults.subagents, config.durability.queue_poll_seconds)
        self.dispatch = RunDispatch(repos, self._lanes.subagents, self._execute, durable, queues)
        self._started = asyncio.Event()  # recovered workflows wait for the start

    async def launch(self) -> set[str]:
        """Launch durable runs (if on); the ids of the runs whose workflows they resume."""
        return await self.dispatch.launch(self._resume)

    def start(self) -> None:
        self.dispatch.start()
        self._started.set()

    def cancel(self, run_id: str) -> None:
        """Stop a killed run: its turn in flight here at once, and wherever it is queued or executing."""
        token = self._cancellations.get(run_id)
        if token is not None:
            token.cancel()
        self.dispatch.kill(run_id)

    async def steer(self, run_id: str, message: str) -> bool:
        """Queue a message for a live run; it reaches the model at the run's next request (``AgentRun.enqueue``),
        or, for a run waiting on its children, with their results. False if the run ended meanwhile."""
        async with self._repos.db.transaction() as tx:
            steered = await self._repos.inbox.add_steer(tx, run_id=run_id, content=message, now=self._clock())
        log.info("run_steered" if steered else "steer_too_late", run_id=run_id)
        return steered

    async def take_inbox(self, run_id: str, *, wake: bool) -> str | None:
        """Consume the run's pending inbox as one prompt (steers as they are, completions in one internal block): a
        step journaled in the store, so a replay takes what the first execution took, nothing included."""

        async def take(tx: Connection) -> list[tuple[str | None, str]]:
            return await self._repos.inbox.take_pending(tx, run_id, self._clock())

        items = await store_step(self._repos, run_id, "inbox.take", take, json.dumps, _taken)
        if not items:
            return None
        steers = [content for source, content in items if source is None]
        events = [content for source, content in items if source is not None]
        parts = steers + ([internal_context.wrap(events, wake=wake)] if events else [])
        return "\n\n".join(parts)

    async def _resume(self, run_id: str, wake: bool) -> None:
        """A run's or a wake's workflow body: started or taken from a queue here, or recovered by DBOS."""
        store_steps.begin()
        self.dispatch.track(run_id)
        await self._started.wait()
        await self._execute(run_id, wake=wake, durable=True)

    async def _own(self, run_id: str) -> None:
        """This process executes the run now: if it dies, a live one resumes or settles the run."""
        async with self._repos.db.transaction() as tx:
            await self._repos.runs.own(tx, run_id)

    async def _execute(self, run_id: str, wake: bool, *, durable: bool = False) -> None:
        run = await self._repos.runs.get(run_id)
        queued = {RunStatus.QUEUED, RunStatus.RUNNING} if durable else {RunStatus.QUEUED}  # a workflow may be resumed
        if run is None or run.status not in ({RunStatus.RUNNING} if wake else queued):
            return
        if wake or durable:  # maybe a dead process's run resumed here, or woken by a child that settled here
            await self._own(run_id)
        session = await self._repos.sessions.get(run.session_key)
        assert session is not None, f"run {run_id} has no session"
        if durable:
            self.dispatch.holds(run.id, queue_of(run, session, wake=wake))
        spawned = {"spawn_site": session.spawn_site} if session.spawn_site else {}
        with structlog.contextvars.bound_contextvars(
            run_id=run.id,
            session_key=session.key,
            agent_id=session.agent_id,
            agent_alias=session.agent_id,  # ZeroClaw's name for it
            depth=session.depth,
            **spawned,
        ):
            async with await self._lanes.lane(run, session, queued=durable):
                try:
                    prompt = await self._first_prompt(run, session, wake)
                    while prompt is not None:
                        outcome = await self._run_turn(run, session, prompt)
                        if outcome.status is RunStatus.AWAITING_APPROVAL:  # paused: a decision wakes it
                            self._apply(await self._approvals.pause(run, session, outcome))
                            break
                        prompt = await self._next_prompt(run, await self._settlement.end_turn(run, session, outcome))
                        self._signals.run_changed(run.id)
                except DBOSWorkflowCancelledError:  # a kill cancelled its workflow, maybe from another process
                    log.info("run_workflow_cancelled")
                    self._apply((await self._settlement.kill(run.id))[1])  # already killed, unless by DBOS's tools
                    raise
                except Exception as crash:  # the model call's own failures are outcomes; this is everything else
                    log.exception("run_crashed")
                    error = self._redact.text(describe_failure(crash))
                    self._apply(await self._settlement.crashed(run, session, error))

    async def _first_prompt(self, run: Run, session: Session, wake: bool) -> Prompt | None:
        """A woken run's decisions on its paused calls, else its inbox; or a queued run's task once it is marked
        running (``None``: nothing to do)."""
        if wake:
            decided = await self._approvals.take_decisions(run.id)
            prompt: Prompt | None = decided or await self.take_inbox(run.id, wake=True)
            if prompt is None:
                log.warning("wake_without_messages")
                outcome = RunOutcome(RunStatus.COMPLETED, run.result_text or NO_OUTPUT, None, run.usage, [])
                return await self._next_prompt(run, await self._settlement.end_turn(run, session, outcome))
            return prompt
        if not await self._mark_running(run.id):
            return None
        log.info("run_started", model=run.model)
        self._signals.run_changed(run.id)
        return run.task

    async def _mark_running(self, run_id: str) -> bool:
        """Queued → running; in a workflow, also true for a run it marked before (a replay): no step needs to record
        it, since a run that was not started then has ended, and ``_execute`` leaves an ended run alone."""
        async with self._repos.db.transaction() as tx:
            started = await self._repos.runs.mark_running(tx, run_id, self._clock())
            await self._repos.runs.own(tx, run_id)
        current = await self._repos.runs.get(run_id)
        return started or (self._durable is not None and current is not None and current.status is RunStatus.RUNNING)

    async def _next_prompt(self, run: Run, ended: TurnEnd) -> str | None:
        """Apply what the settled turn asks for; then the inbox for another turn, or ``None``."""
        if ended.after is not None:
            self._apply(ended.after)
        return await self.take_inbox(run.id, wake=True) if ended.again else None

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
        start = await store_step(
            self._repos,
            run.id,
            "turn.start",
            lambda tx: turn_start(self._repos, run.id, session.key, run.usage),
            TurnStart.encoded,
            TurnStart.decoded,
        )
        before, stored = start.usage, TurnMessages(self._repos, run.id, start)

        async def persist(messages: Sequence[ModelMessage], turn: Usage) -> None:
            new = self._redact.messages(await stored.unstored(messages))
            async with self._repos.db.transaction() as tx:
                await self._repos.transcripts.append(tx, session.key, run.id, new)
                await self._repos.runs.record_usage(tx, run.id, before.then(turn))
                warned = await self._budgets.record(tx, run, session, new)
            if warned:
                self._signals.outbox_changed()
            self._signals.progressed()
            self._signals.run_changed(run.id)

        async def drain() -> list[str]:
            text = await self.take_inbox(run.id, wake=False)
            return [text] if text else []

        request = RunRequest(
            prompt=prompt,
            system_prompt=system_prompt,
            model=JournaledModel(  # the journal records answers and errors redacted
                RedactedModel(
                    MeteredModel(
                        self._models.chain(run.model, agent=session.agent_id), self._budgets.meter(run, session)
                    ),
                    self._redact,
                )
            ),
            history=await self._repos.transcripts.history(session.key, start.history_rows),
            thinking=run.thinking,
            timeout_seconds=run.timeout_seconds,
            toolsets=([toolset] if toolset else []) + await self._mcp.toolsets(session),
            deps=ToolDeps(control=self._tools, caller=Caller(session=session, run_id=run.id)),
            parallel_tools=bool(runtime.parallel_tools),
            request_limit=runtime.tool_iterations if session.delegation in _DELEGATES else None,
            dedup_exempt=frozenset(runtime.tool_call_dedup_exempt),
            gate=tool_gate(await self._envelopes.effective(session, run), self._config),
            result_limits=ResultLimits.of(self._config),
            redact=self._redact,
        )
        token = self._cancellations.setdefault(run.id, CancellationToken())
        try:
            # A main turn is not redirected by results that arrive meanwhile (they are already posted for
            # people); they join its session's history when it ends. A sub-agent reads its inbox at every step.
            inbox = drain if session.kind == SessionKind.SUBAGENT else None
            outcome = await run_agent(request, on_step=persist, drain=inbox, cancellation=token)
        finally:
            self._cancellations.pop(run.id, None)
        error = None if outcome.error is None else self._redact.text(outcome.error)
        return replace(
            outcome, usage=before.then(outcome.usage), result_text=self._redact.text(outcome.result_text), error=error
        )
