"""Execution: a run's turns from its first prompt to its end, and its inbox taken out as a prompt.

Where and when a run starts is the launcher's business (a port); what a turn may call is the turn setup's; how a
turn ends is settlement's; what must happen after its commit is handed to :class:`~bot.core.runs.effects.Effects`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import structlog
from dbos._error import DBOSWorkflowCancelledError  # not re-exported by dbos
from pydantic_ai.messages import ModelMessage, UserContent
from pydantic_ai.tools import DeferredToolResults

from bot.agents.journal import JournaledModel
from bot.agents.models import ModelFactory
from bot.agents.result_caps import ResultLimits
from bot.agents.runner import NO_OUTPUT, RunOutcome, RunRequest, describe_failure, run_agent
from bot.agents.streaming import streaming_to
from bot.core.attachments import earlier_turns, prompt_of
from bot.core.context import CoreContext
from bot.core.run_traces import RunTraces
from bot.core.runs import internal_context
from bot.core.runs.announcements import is_voice_turn
from bot.core.runs.effects import Effects
from bot.core.runs.ports import Drafts, Harness, Journal, TurnSetup
from bot.core.runs.prompts import subagent_context
from bot.core.runs.run_lanes import RunLanes
from bot.core.runs.settlement import Settlement, TurnEnd
from bot.core.runs.turn_journal import TurnMessages, TurnStart, turn_start
from bot.records import Run, RunStatus, Session, SessionKind, Usage
from bot.redaction import RedactedModel
from storage.db import Connection

log = structlog.get_logger(__name__)
# a turn starts from a prompt (text, or text and attachments), or from people's decisions on its paused calls
Prompt = str | Sequence[UserContent] | DeferredToolResults


def _taken(recorded: str) -> list[tuple[str | None, str]]:
    """An inbox take's items as its step recorded them.

    JSON turns the pairs into lists, so they are pairs again here."""
    return [(source, content) for source, content in json.loads(recorded)]


class Execution:
    """A run's turns, from its first prompt to its end.

    They run in whichever process executes the run."""

    def __init__(
        self,
        ctx: CoreContext,
        models: ModelFactory,
        settlement: Settlement,
        effects: Effects,
        turns: TurnSetup,
        journal: Journal,
        lanes: RunLanes,
        harness: Harness,
        drafts: Drafts,
        traces: RunTraces,
    ) -> None:
        self._ctx = ctx  # its redactor: what a turn stores and says, and tool results before the model reads them
        self._models = models
        self._settlement = settlement
        self._effects = effects
        self._turns = turns
        self._journal = journal
        self._lanes = lanes
        self._harness = harness  # harness sessions' turns (an ACP agent's)
        self._drafts = drafts  # answers shown while they are written
        self._traces = traces  # each execution's span, the model requests and tool calls beneath it

    async def take_inbox(self, run_id: str, *, wake: bool, deliver: bool = False) -> str | None:
        """Consume the run's pending inbox as one prompt.

        Steers go in as they are, completions in one internal block (``deliver``: for the user, in the main agent's
        voice). The take is a step journaled in the store, so a replay takes what the first execution took, nothing
        included."""

        async def take(tx: Connection) -> list[tuple[str | None, str]]:
            return await self._ctx.repos.inbox.take_pending(tx, run_id, self._ctx.clock())

        items = await self._journal.step(run_id, "inbox.take", take, json.dumps, _taken)
        if not items:
            return None
        steers = [content for source, content in items if source is None]
        events = [content for source, content in items if source is not None]
        parts = steers + ([internal_context.wrap(events, wake=wake, deliver=deliver)] if events else [])
        return "\n\n".join(parts)

    async def _own(self, run_id: str) -> None:
        """This process executes the run now: if it dies, a live one resumes or settles the run."""
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.runs.own(tx, run_id)

    async def execute(self, run: Run, session: Session, wake: bool, durable: bool) -> None:
        """A run's body: its turns until it ends, waits or pauses.

        The launcher reads the run and its session just before; ``durable``: this is its workflow.
        """
        queued = {RunStatus.QUEUED, RunStatus.RUNNING} if durable else {RunStatus.QUEUED}  # a workflow may be resumed
        if run.status not in ({RunStatus.RUNNING} if wake else queued):
            return
        if wake:  # maybe woken by a child that settled here (a start owns the run as it marks it running)
            await self._own(run.id)
        spawned = {"spawn_site": session.spawn_site} if session.spawn_site else {}
        with (
            structlog.contextvars.bound_contextvars(
                run_id=run.id,
                session_key=session.key,
                agent_id=session.agent_id,
                # the same id under the field name delegation's logs use (bot/profiles.py)
                agent_alias=session.agent_id,
                depth=session.depth,
                **spawned,
            ),
            self._traces.execution(run, session, woken=wake) as noted,
        ):
            async with await self._lanes.lane(run, session, queued=durable):
                try:
                    prompt, start = await self._first_prompt(run, session, wake, durable)
                    while prompt is not None:
                        outcome = await self._run_turn(run, session, prompt, start)
                        start = None  # a later turn starts where this one left the run
                        noted(outcome.status)
                        if outcome.status is RunStatus.AWAITING_APPROVAL:  # paused: a decision wakes it
                            self._effects.apply(await self._turns.pause(run, session, outcome))
                            break
                        prompt = await self._next_prompt(run, await self._settlement.end_turn(run, session, outcome))
                        self._ctx.signals.run_changed(run.id)
                except DBOSWorkflowCancelledError:  # a kill cancelled its workflow, maybe from another process
                    log.info("run_workflow_cancelled")
                    # already killed, unless by DBOS's tools
                    self._effects.apply((await self._settlement.kill(run.id))[1])
                    raise
                except Exception as crash:  # the model call's own failures are outcomes; this is everything else
                    log.exception("run_crashed")
                    error = self._ctx.redact.text(describe_failure(crash))
                    noted(RunStatus.FAILED)
                    self._effects.apply(await self._settlement.crashed(run, session, error))
                finally:
                    await self._drafts.settled(run.id)

    async def _first_prompt(
        self, run: Run, session: Session, wake: bool, durable: bool
    ) -> tuple[Prompt | None, TurnStart | None]:
        """A woken run's decisions on its paused calls, else its inbox; or a queued run's task once it is marked
        running (``None``: nothing to do). With it, where its first turn starts, if that is known already."""
        if wake:
            decided = await self._turns.decisions(run.id)
            prompt: Prompt | None = decided or await self.take_inbox(run.id, wake=True)
            if prompt is None:
                log.warning("wake_without_messages")
                outcome = RunOutcome(RunStatus.COMPLETED, run.result_text or NO_OUTPUT, None, run.usage, [])
                return await self._next_prompt(run, await self._settlement.end_turn(run, session, outcome)), None
            return prompt, None
        started, start = await self._mark_running(run, session, durable)
        if not started:
            return None, None
        log.info("run_started", model=run.model)
        self._ctx.signals.run_changed(run.id)
        if not is_voice_turn(run):  # its task, with what was attached to it (kept with the run, not downloaded again)
            return prompt_of(run.task, await self._ctx.repos.run_attachments.of_run(run.id)), start
        results = await self.take_inbox(run.id, wake=False, deliver=True)
        if results is None:  # nothing to tell: it ends silent
            silent = RunOutcome(RunStatus.COMPLETED, internal_context.SILENT_REPLIES[0], None, run.usage, [])
            return await self._next_prompt(run, await self._settlement.end_turn(run, session, silent)), None
        return results, start

    async def _mark_running(self, run: Run, session: Session, durable: bool) -> tuple[bool, TurnStart | None]:
        """Queued → running; in a workflow, also true for a run it marked before (a replay): no step needs to record
        it, since a run that was not started then has ended, and ``_execute`` leaves an ended run alone.

        A model's turn comes next, so where it starts is read (or read back) in the same transaction."""
        runs = self._ctx.repos.runs
        async with self._ctx.repos.db.transaction() as tx:
            running = started = await runs.mark_running(tx, run.id, self._ctx.clock())  # owns it too
            if not started:
                await runs.own(tx, run.id)  # maybe a dead process's run, resumed here
                if durable:
                    current = await runs.get(run.id, tx)
                    running = current is not None and current.status is RunStatus.RUNNING
            model_turn = running and session.acp_agent is None
            start = await self._turn_start(run, session, tx, first=started) if model_turn else None
        return running, start

    async def _turn_start(
        self, run: Run, session: Session, tx: Connection | None = None, *, first: bool = False
    ) -> TurnStart:
        """Where a model's turn starts: a step, so a replayed turn starts where the first execution's did.

        ``first``: the run's first turn, as it is marked running."""

        async def work(tx: Connection) -> TurnStart:
            return await turn_start(self._ctx.repos, run.id, session.key, run.usage, first=first)

        return await self._journal.step(run.id, "turn.start", work, TurnStart.encoded, TurnStart.decoded, tx)

    async def _next_prompt(self, run: Run, ended: TurnEnd) -> str | None:
        """Apply what the settled turn asks for; then the inbox for another turn, or ``None``."""
        if ended.after is not None:
            self._effects.apply(ended.after)
        return await self.take_inbox(run.id, wake=True) if ended.again else None

    async def _run_turn(self, run: Run, session: Session, prompt: Prompt, start: TurnStart | None) -> RunOutcome:
        """One turn of the run: its model (or its harness's agent) from ``prompt`` to an outcome.

        ``start``: where it starts, if that was read already."""
        if session.acp_agent is not None:  # a harness session: its ACP agent runs the turn, a kill cancels it
            token = self._effects.cancellations.token(run.id)
            try:
                text = "\n\n".join(p for p in prompt if isinstance(p, str)) if isinstance(prompt, list) else str(prompt)
                return await self._harness.turn(run, session, text, lambda: token.cancelled)
            finally:
                self._effects.cancellations.done(run.id)
        agent = self._ctx.config.agents.list[session.agent_id]
        system_prompt = agent.system_prompt or self._ctx.config.agents.defaults.system_prompt
        if session.kind == SessionKind.SUBAGENT:
            system_prompt += "\n\n" + subagent_context(
                session, self._ctx.config.agents.defaults.subagents.max_spawn_depth
            )
        tools = await self._turns.tools(run, session)
        if tools.context:
            system_prompt += "\n\n" + tools.context
        start = start or await self._turn_start(run, session)
        before = start.usage
        stored = TurnMessages(self._ctx.repos, run.id, start, replayed=not self._journal.first_execution())

        async def persist(messages: Sequence[ModelMessage], turn: Usage) -> None:
            new = self._ctx.redact.messages(await stored.unstored(messages))
            async with self._ctx.repos.db.transaction() as tx:
                await self._ctx.repos.transcripts.append(tx, session.key, run.id, new)
                await self._ctx.repos.runs.record_usage(tx, run.id, before.then(turn))
                warned = await self._turns.record(tx, run, session, new)
            if warned:
                self._ctx.signals.outbox_changed()
            self._ctx.signals.progressed()
            self._ctx.signals.run_changed(run.id)

        async def drain() -> list[str]:
            text = await self.take_inbox(run.id, wake=False)
            return [text] if text else []

        request = RunRequest(
            prompt=prompt,
            system_prompt=system_prompt,
            model=JournaledModel(  # the journal records answers and errors redacted
                RedactedModel(
                    self._turns.metered(self._models.chain(run.model, agent=session.agent_id), run, session),
                    self._ctx.redact,
                )
            ),
            history=earlier_turns(await self._ctx.repos.transcripts.history(session.key, start.history_rows)),
            thinking=run.thinking,
            timeout_seconds=run.timeout_seconds,
            toolsets=tools.toolsets,
            deps=tools.deps,
            parallel_tools=tools.parallel_tools,
            request_limit=tools.request_limit,
            dedup_exempt=tools.dedup_exempt,
            gate=tools.gate,
            result_limits=ResultLimits.of(self._ctx.config),
            redact=self._ctx.redact,
            instrument=self._traces.instrumentation or False,
        )
        cancellations = self._effects.cancellations
        token = cancellations.token(run.id)
        try:
            # A main turn is not redirected by results that arrive meanwhile (they are already posted for
            # people); they join its session's history when it ends. A sub-agent reads its inbox at every step.
            inbox = drain if session.kind == SessionKind.SUBAGENT else None
            with streaming_to(await self._drafts.sink(run, session)):
                outcome = await run_agent(request, on_step=persist, drain=inbox, cancellation=token)
        finally:
            cancellations.done(run.id)
            await self._drafts.finished(run.id)
        error = None if outcome.error is None else self._ctx.redact.text(outcome.error)
        return replace(
            outcome,
            usage=before.then(outcome.usage),
            result_text=self._ctx.redact.text(outcome.result_text),
            error=error,
        )
