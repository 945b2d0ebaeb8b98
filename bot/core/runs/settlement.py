"""Settlement: every terminal transition of a run and where its result goes — exactly once.

Each transition and its result's destination are written in one transaction, guarded by the run's current
status, so a crash can neither lose a result nor deliver it twice. What must happen after the commit is not
done here: it is returned as an :class:`AfterCommit` value, which the orchestrator applies in one place.

The run state machine (the guard is the status the UPDATE requires):

=================  ==============================================  =================  ===========================
from               event                                           to                 after commit
=================  ==============================================  =================  ===========================
(none)             spawn, chat or follow-up persisted              queued             queued for the supervisor
queued             takes its lane (``mark_running``)               running            changed
running            turn ends; a sub-agent's children are unsettled waiting_children   (none)
running            turn ends; a sub-agent's inbox has results      running            (none: a turn on its inbox)
running            turn ends otherwise                             completed, failed, result routed, changed
                                                                   timed_out
waiting_children   last child settles; its inbox has results       running            woken, changed
waiting_children   last child settles; nothing new                 completed          result routed, changed
running            turn ends with always_ask calls to approve      awaiting_approval  request posted, deadline set
awaiting_approval  its last call decided or timed out              running            woken with the decisions
any live           kill of its subtree (deepest first)             killed             turn cancelled, changed,
                                                                                      parent may settle
any live but       found at start-up (the process died)            interrupted        topmost of a chain routed
awaiting_approval
any live           its task crashes on an unexpected error         failed             result routed, changed
=================  ==============================================  =================  ===========================

A turn that ends after its run was killed only records what it spent: the kill already settled the run. The two
``awaiting_approval`` transitions are :mod:`bot.core.tools.approvals`'s (a pause routes nothing and ends nothing).

A result is *routed* to the run's direct requester: a top-level requester (a main session, or none) gets a
Discord announcement (outbox row), or, for a sub-agent its main agent spawned, a main-agent *voice turn* that tells
people in the agent's own words (announced as they are, unless it ends completed); a live nested requester gets an
inbox message; a requester that is gone passes it to its own requester; a killed requester drops it. A killed run
announces nothing. A delegated child (``spawn_subagent``, ``delegate``) is not routed to the channel: its caller
reads its result (from the run, or its delegate task record, settled here in the same transaction); a background
delegate's result also reaches a sub-agent caller, waiting on its children or in its turn; a blocking child whose
caller's turn ends without it is stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import structlog

from bot.agents.runner import INTERRUPTED_BEFORE, KILLED_BEFORE, RunOutcome, partial_result
from bot.core.context import CoreContext
from bot.core.runs import internal_context
from bot.core.runs.announcements import INTERRUPTED_REASON, is_voice_turn
from bot.core.runs.results import Results
from bot.records import LIVE_STATUSES, Cleanup, Run, RunKind, RunStatus, Session, SessionKind
from storage.db import Connection

if TYPE_CHECKING:  # the ports name AfterCommit: imported for annotations only
    from bot.core.runs.ports import Archive, TaskRecords

log = structlog.get_logger(__name__)


@dataclass
class AfterCommit:
    """What a committed settlement asks of the process (applied by :class:`~bot.core.runs.effects.Effects`)."""

    wake: list[str] = field(default_factory=list)  # waiting runs to resume with their inbox
    queue: list[str] = field(default_factory=list)  # queued runs to start (again: their start was lost)
    changed: list[str] = field(default_factory=list)  # runs whose state changed (status listeners)
    cancel: list[str] = field(default_factory=list)  # killed runs whose turn in flight must stop
    archive_at: list[float] = field(default_factory=list)  # archive deadlines written
    archive_now: list[str] = field(default_factory=list)  # ``cleanup: delete`` sessions done with
    ended: list[str] = field(default_factory=list)  # ended runs whose run-mode thread binding may end
    outbox: bool = False  # outbox rows were added: wake the delivery worker


@dataclass(frozen=True)
class TurnEnd:
    """How a turn settled: ``again`` when the run takes another turn with its inbox; ``after`` is ``None`` when
    nothing happened that anyone must hear of (the run waits on its children, goes on, or had been killed)."""

    again: bool
    after: AfterCommit | None = None


class Settlement:
    def __init__(self, ctx: CoreContext, archiving: Archive, results: Results, records: TaskRecords) -> None:
        self._ctx = ctx
        self._archiving = archiving
        self._results = results
        self._records = records

    async def end_turn(self, run: Run, session: Session, outcome: RunOutcome) -> TurnEnd:
        """After a turn (``outcome.usage`` is the run's total): wait for children, take another turn, or end."""
        now, after, runs = self._ctx.clock(), AfterCommit(), self._ctx.repos.runs
        async with self._ctx.repos.db.transaction() as tx:
            current = await runs.get(run.id, tx)
            if current is None:
                return TurnEnd(again=False)
            if current.usage != outcome.usage:  # each step records it as it is spent: the last one, mostly, all
                await runs.record_usage(tx, run.id, outcome.usage)
            if outcome.served_model is not None:
                await runs.record_served_model(tx, run.id, outcome.served_model)
            if current.status is not RunStatus.RUNNING:
                if session.kind == SessionKind.MAIN:
                    await self._results.keep_unread(tx, run.id, session.key, now)
                return TurnEnd(again=False)  # killed meanwhile: its spending is counted, and it announces nothing
            failed = outcome.status is not RunStatus.COMPLETED
            if session.kind == SessionKind.MAIN and await self._results.main_turn_ended(tx, run, now, failed=failed):
                after.outbox = True
            await self._stop_abandoned(tx, run.id, now, after)
            quiet = after if after.cancel else None  # nothing else to apply while the run goes on
            orchestrating = outcome.status is RunStatus.COMPLETED and session.kind == SessionKind.SUBAGENT
            if orchestrating and await runs.count_unsettled_children(run.id, tx):
                await runs.set_status(
                    tx, run.id, RunStatus.RUNNING, RunStatus.WAITING_CHILDREN, result_text=outcome.result_text
                )
                log.info("run_waiting_on_children")
                return TurnEnd(again=False, after=quiet)
            if orchestrating and await self._ctx.repos.inbox.count_pending(tx, run.id) > 0:
                return TurnEnd(again=True, after=quiet)
            await runs.finish(tx, run.id, outcome.status, now, result_text=outcome.result_text, error=outcome.error)
            finished = replace(
                current,
                status=outcome.status,
                ended_at=now,
                result_text=outcome.result_text,
                error=outcome.error,
                usage=outcome.usage,
                served_model=outcome.served_model or current.served_model,
            )
            await self._route(tx, finished, session, now, after)
        log.info("run_finished", status=outcome.status.value, error=outcome.error)
        return TurnEnd(again=False, after=after)

    async def kill(self, run_id: str) -> tuple[list[Run], AfterCommit]:
        """Stop a run and every live run below it (deepest first). Killed runs announce nothing."""
        after = AfterCommit()
        subtree = await self._ctx.repos.runs.live_subtree(run_id)
        if not subtree:
            return [], after
        killed_ids = {run.id for run in subtree}
        now = self._ctx.clock()
        transcripts = self._ctx.repos.transcripts
        partials = {
            run.id: partial_result(await transcripts.for_run(run.id), stopped_by=KILLED_BEFORE) for run in subtree
        }
        async with self._ctx.repos.db.transaction() as tx:
            for run in subtree:
                await self._ctx.repos.runs.finish(
                    tx, run.id, RunStatus.KILLED, now, result_text=partials[run.id], error="killed"
                )
                if run.kind is RunKind.CHAT and await self._results.main_turn_ended(tx, run, now, failed=True):
                    after.outbox = True
                killed = replace(run, status=RunStatus.KILLED)
                await self._records.settle(tx, killed, now, killed_directly=run.id == run_id)
            for run in subtree:
                if run.parent_run_id and run.parent_run_id not in killed_ids:
                    await self._child_settled(tx, run.parent_run_id, now, after)
        for run in subtree:
            log.info("run_killed", run_id=run.id, session_key=run.session_key)
            after.archive_now += await self._ephemeral(run.session_key)
        after.cancel += [run.id for run in subtree]
        after.changed += [run.id for run in subtree]
        after.ended += [run.id for run in subtree]
        return subtree, after

    async def interrupt_leftovers(self, executor_id: str, resuming: set[str], *, or_nobody: bool) -> AfterCommit:
        """Runs a dead process (``executor_id``: at start-up this one's last life, else one a janitor claimed; and,
        ``or_nobody``, runs no process owns) left live end as ``interrupted`` (but those ``resuming``, and those
        paused for approval); the topmost of each chain is routed."""
        after, paused = AfterCommit(), RunStatus.AWAITING_APPROVAL
        owned = await self._ctx.repos.runs.live_owned_by(executor_id, or_nobody=or_nobody)
        leftovers = [run for run in owned if run.status is not paused and run.id not in resuming]
        live_ids = {run.id for run in leftovers}
        for run in leftovers:
            session = await self._ctx.repos.sessions.get(run.session_key)
            assert session is not None, f"run {run.id} has no session"
            now = self._ctx.clock()
            partial = partial_result(await self._ctx.repos.transcripts.for_run(run.id), stopped_by=INTERRUPTED_BEFORE)
            async with self._ctx.repos.db.transaction() as tx:
                if not await self._ctx.repos.runs.finish(
                    tx, run.id, RunStatus.INTERRUPTED, now, result_text=partial, error=INTERRUPTED_REASON
                ):
                    continue
                if run.kind is RunKind.CHAT and await self._results.main_turn_ended(tx, run, now, failed=True):
                    after.outbox = True
                if run.parent_run_id not in live_ids or session.delegation is not None:
                    interrupted = replace(
                        run, status=RunStatus.INTERRUPTED, ended_at=now, error=INTERRUPTED_REASON, result_text=partial
                    )
                    await self._route(tx, interrupted, session, now, after)
            log.warning("run_interrupted", run_id=run.id, session_key=session.key, previous_status=run.status.value)
        return after

    async def crashed(self, run: Run, session: Session, error: str) -> AfterCommit:
        """End ``failed`` a run whose task died unexpectedly, routed like any other end: nobody waits on it for ever."""
        after, now = AfterCommit(), self._ctx.clock()
        partial = partial_result(await self._ctx.repos.transcripts.for_run(run.id))
        async with self._ctx.repos.db.transaction() as tx:
            if not await self._ctx.repos.runs.finish(
                tx, run.id, RunStatus.FAILED, now, result_text=partial, error=error
            ):
                return after
            if run.kind is RunKind.CHAT and await self._results.main_turn_ended(tx, run, now, failed=True):
                after.outbox = True
            failed = replace(run, status=RunStatus.FAILED, ended_at=now, error=error, result_text=partial)
            await self._route(tx, failed, session, now, after)
        after.changed.append(run.id)
        return after

    async def _stop_abandoned(self, tx: Connection, run_id: str, now: float, after: AfterCommit) -> None:
        """Stop and archive the blocking children a turn left running when it ended. Such a child (a
        ``spawn_subagent``, a synchronous ``delegate``) lost its tool call to a timeout or a failing sibling: nobody
        waits for it any more."""
        for child in await self._ctx.repos.runs.live_delegated_children(tx, run_id):
            partial = partial_result(await self._ctx.repos.transcripts.for_run(child.id), stopped_by=KILLED_BEFORE)
            await self._ctx.repos.runs.finish(tx, child.id, RunStatus.KILLED, now, result_text=partial, error="killed")
            await self._records.settle(tx, replace(child, status=RunStatus.KILLED), now)
            log.info("run_killed", run_id=child.id, reason="its caller's turn ended")
            after.cancel.append(child.id)
            after.changed.append(child.id)
            after.archive_now.append(child.session_key)

    async def _ephemeral(self, session_key: str) -> list[str]:
        """A delegated child's session, which is archived once its run ends however it ends."""
        session = await self._ctx.repos.sessions.get(session_key)
        return [session_key] if session is not None and session.delegation is not None else []

    async def _route(self, tx: Connection, run: Run, session: Session, now: float, after: AfterCommit) -> None:
        """Deliver a run's result to its direct requester, exactly once, in the caller's transaction."""
        if session.delegation is not None:  # its caller reads the result from the run or its task record
            after.archive_now.append(session.key)
            after.ended.append(run.id)
            task = await self._records.settle(tx, run, now)
            caller = await self._ctx.repos.runs.get(run.parent_run_id, tx) if run.parent_run_id else None
            if caller is not None and caller.status is RunStatus.WAITING_CHILDREN:  # a background task's caller
                await self._results.tell_run(tx, caller, run, session, now)
                await self._child_settled(tx, caller.id, now, after)
            elif caller is not None and caller.status is RunStatus.RUNNING and task is not None and task.background:
                caller_session = await self._ctx.repos.sessions.get(caller.session_key)
                if caller_session is not None and caller_session.kind == SessionKind.SUBAGENT:  # it reads its inbox
                    await self._results.tell_run(tx, caller, run, session, now)  # mid-turn: it will not wait for it
            return
        deadline = await self._archiving.mark_deadline(tx, session, now)
        if deadline is not None:
            after.archive_at.append(deadline)
        after.ended.append(run.id)
        silent = run.status is RunStatus.COMPLETED and internal_context.is_silent(run.result_text)
        done_with = [session.key] if session.cleanup == Cleanup.DELETE else []
        target_id = run.parent_run_id
        while True:
            target = await self._ctx.repos.runs.get(target_id, tx) if target_id else None
            target_session = await self._ctx.repos.sessions.get(target.session_key) if target else None
            if target is None or target_session is None or target_session.kind == SessionKind.MAIN:
                if silent or (is_voice_turn(run) and run.status is not RunStatus.COMPLETED):  # told as they are
                    after.archive_now += done_with
                    return
                requester = await self._ctx.repos.sessions.get(session.requester_session_key or "")
                if self._results.speaks_for(run, session, requester):
                    after.queue += await self._results.voice(tx, run, session, requester, now)
                    after.outbox = True  # maybe announced as it is
                    return
                announcement = await self._results.announce(tx, run, session, requester, now)
                after.ended.remove(run.id)  # its run-mode binding ends once the announcement is delivered
                if announcement.kind == "completion":
                    await self._results.tell_main_agent(tx, run, session, requester, now)
                after.outbox = True
                return
            if target.status is RunStatus.KILLED:
                log.info("completion_dropped", reason="requester killed", requester_run_id=target.id)
                return
            if target.status in LIVE_STATUSES and target_session.archived_at is None:
                if not silent:
                    await self._results.tell_run(tx, target, run, session, now)
                after.archive_now += done_with
                if target.status is RunStatus.WAITING_CHILDREN:
                    await self._child_settled(tx, target.id, now, after)
                return
            target_id = target.parent_run_id

    async def _child_settled(self, tx: Connection, parent_run_id: str, now: float, after: AfterCommit) -> None:
        """A child of ``parent_run_id`` settled: if the parent waits and nothing is left, wake it or end it."""
        runs = self._ctx.repos.runs
        parent = await runs.get(parent_run_id, tx)
        if parent is None or parent.status is not RunStatus.WAITING_CHILDREN:
            return
        if await runs.count_unsettled_children(parent.id, tx):
            return
        after.changed.append(parent.id)
        if await self._ctx.repos.inbox.count_pending(tx, parent.id):
            await runs.set_status(tx, parent.id, RunStatus.WAITING_CHILDREN, RunStatus.RUNNING)
            log.info("run_woken", run_id=parent.id)
            after.wake.append(parent.id)
            return
        parent_session = await self._ctx.repos.sessions.get(parent.session_key)
        assert parent_session is not None, f"run {parent.id} has no session"
        await runs.finish(tx, parent.id, RunStatus.COMPLETED, now)
        await self._route(tx, replace(parent, status=RunStatus.COMPLETED, ended_at=now), parent_session, now, after)
