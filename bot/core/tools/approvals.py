"""Approvals: a run paused on tool calls its agent's risk profile names in ``always_ask``, until a person decides.

A turn that ends with such calls pending moves its run from ``running`` to ``awaiting_approval`` and stores each
call (what it is, where to ask, until when) in the same transaction, so the pause survives a restart: nothing here
lives only in memory, deadlines are rebuilt from the rows at start-up. The run's owner or a moderator of the run's
server decides, from the request's own channel only (a moderator's decision on someone else's run is audited under
the run's server); no decision by the deadline denies. When the last of a
run's calls is decided the run is woken and its next turn starts from the decisions (``DeferredToolResults``): an
approved call runs then, a denied one reads as a refusal to the model. A killed run's pending calls are cancelled.
An ACP agent's permission request is asked the same way, but its run keeps running while the agent waits.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

import structlog
from pydantic_ai.tools import DeferredToolResults, ToolApproved, ToolDenied

from bot.agents.runner import RunOutcome
from bot.agents.tool_gate import DENIED, TIMED_OUT
from bot.core.context import CoreContext
from bot.core.durable.store_steps import once, store_step
from bot.core.errors import UserError
from bot.core.runs.settlement import AfterCommit
from bot.core.timers import skipped_if_bad
from bot.i18n import Words
from bot.records import Actor, Approval, ApprovalStatus, Run, RunStatus, Session, short_run_id
from bot.redaction import Redactor
from storage.audit import AuditEntry
from storage.db import Connection

log = structlog.get_logger(__name__)
LIVE_POLL_SECONDS = 0.2  # how often an ACP agent's waiting request looks for its decision
LIVE_GRACE_SECONDS = 5.0  # past its deadline, a waiting request denies itself (its timer may be another process's)


def _escaped(char: str) -> str:
    """A character as a JSON escape.

    Beyond the Basic Multilingual Plane it is a pair of surrogates."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def shown_arguments(arguments: dict[str, Any], redact: Redactor) -> str:
    """A call's arguments as people see them: JSON of every character that will be sent, each visible (a control,
    format or spacing character other than the space as its escape, so the JSON still reads as the same
    arguments), no secret of the bot's."""
    text = json.dumps(arguments, ensure_ascii=False)
    return redact.text("".join(char if char.isprintable() else _escaped(char) for char in text))


def _result(status: ApprovalStatus) -> ToolApproved | ToolDenied:
    """What the model reads of a decision."""
    if status is ApprovalStatus.APPROVED:
        return ToolApproved()
    return ToolDenied(TIMED_OUT if status is ApprovalStatus.TIMED_OUT else DENIED)


class Approvals:
    def __init__(self, ctx: CoreContext, apply: Callable[[AfterCommit], None]) -> None:
        self._ctx = ctx
        self._apply = apply
        self._listeners: list[Callable[[], None]] = []

    @property
    def timeout_minutes(self) -> float:
        return self._ctx.config.agents.defaults.approval_timeout_minutes

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever an approval is asked for or settled.

        The Discord side then posts or edits its message."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in self._listeners:
            listener()

    async def start(self) -> None:
        """Rebuild the deadline of every call still waiting.

        Runs awaiting approval stay paused over a restart."""
        for approval in await self._ctx.repos.approvals.pending():
            with skipped_if_bad("approval_deadline", approval_id=approval.id, deadline=approval.deadline):
                self._ctx.timers.at(f"approval:{approval.id}", approval.deadline, self.expire, approval.id)

    async def pause(self, run: Run, session: Session, outcome: RunOutcome) -> AfterCommit:
        """A turn ended with calls to approve: store them and pause the run (unless it was killed meanwhile). A
        durable run's workflow replayed after its pause (the process stopped before DBOS recorded the workflow's end)
        asks nothing again: the calls may be decided already, and their wake owns the run."""
        now = self._ctx.clock()
        channel_id = await self._asked_in(run, session)
        approvals = [
            Approval(
                id=uuid.uuid4().hex,
                run_id=run.id,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                arguments=shown_arguments(call.args_as_dict(), self._ctx.redact),
                channel_id=channel_id,
                owner_user_id=run.requester_user_id,
                created_at=now,
                deadline=now + self.timeout_minutes * 60,
            )
            for call in outcome.pending
        ]
        paused = False

        async def store(tx: Connection) -> None:
            nonlocal paused
            await self._ctx.repos.runs.record_usage(tx, run.id, outcome.usage)
            paused = await self._ctx.repos.runs.set_status(
                tx, run.id, RunStatus.RUNNING, RunStatus.AWAITING_APPROVAL, result_text=outcome.result_text
            )
            if paused:
                await self._ctx.repos.approvals.add(tx, approvals)

        if not await once(self._ctx.repos, run.id, "approvals.pause", store):
            log.info("pause_replayed")  # its workflow replayed after the pause: the run is the decisions' now
            return AfterCommit()
        if not paused:
            return AfterCommit()
        for approval in approvals:
            self._ctx.timers.at(f"approval:{approval.id}", approval.deadline, self.expire, approval.id)
        log.info("run_awaiting_approval", tools=[approval.tool_name for approval in approvals])
        self._changed()
        return AfterCommit(changed=[run.id])

    async def _asked_in(self, run: Run, session: Session) -> int:
        """Where a run's requests are posted: its session's bound thread, else the run's channel."""
        bound = await self._ctx.repos.bindings.for_session(session.key)
        return bound[0].thread_id if bound else run.channel_id

    async def ask_live(
        self, run: Run, session: Session, title: str, details: str, cancelled: Callable[[], bool]
    ) -> bool:
        """An ACP agent's permission request, asked as an ``always_ask`` call is; true once approved.

        The agent waits for the answer, so the run stays running and this waits in its process (watching the
        store, where any process may record the decision); no decision by the deadline, or a kill, denies."""
        now = self._ctx.clock()
        arguments = shown_arguments({"agent": session.acp_agent, "options": details}, self._ctx.redact)
        approval = Approval(
            id=uuid.uuid4().hex,
            run_id=run.id,
            tool_call_id=f"acp-{uuid.uuid4().hex}",
            tool_name=title.replace("`", "'")[:200],  # shown in a code span
            arguments=arguments,
            channel_id=await self._asked_in(run, session),
            owner_user_id=run.requester_user_id,
            created_at=now,
            deadline=now + self.timeout_minutes * 60,
        )
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.approvals.add(tx, [approval])
        self._ctx.timers.at(f"approval:{approval.id}", approval.deadline, self.expire, approval.id)
        log.info("acp_permission_asked", approval_id=approval.id, request=approval.tool_name)
        self._changed()
        while (current := await self._ctx.repos.approvals.get(approval.id)) is not None:
            if current.status is not ApprovalStatus.PENDING:
                return current.status is ApprovalStatus.APPROVED
            if cancelled():  # killed: its request is closed as its run's
                await self.runs_ended([run.id])
            elif self._ctx.clock() > approval.deadline + LIVE_GRACE_SECONDS:
                await self.expire(approval.id)
            await asyncio.sleep(LIVE_POLL_SECONDS)
        return False

    async def _awaits_decisions(self, run: Run) -> bool:
        """Whether the run is where its requests may be decided: paused, or running while its ACP agent waits."""
        session = await self._ctx.repos.sessions.get(run.session_key)
        live = session is not None and session.acp_agent is not None
        return run.status is (RunStatus.RUNNING if live else RunStatus.AWAITING_APPROVAL)

    async def decide(self, actor: Actor, approval_id: str, approve: bool, *, where: Collection[int]) -> Words:
        """A person's Approve or Deny, from the channels ``where``.

        ``where`` is the channel clicked in and, in a thread, the channel it is in. It counts only from the request's
        own channel (or a thread of it), and only for the run's owner or a moderator of the run's server (audited under
        that server when the run is someone else's)."""
        approval = await self._ctx.repos.approvals.get(approval_id)
        if approval is None:
            raise UserError(Words("refused-approval-unknown"))
        if approval.channel_id not in where:  # a copy of its buttons elsewhere: nothing of it is told there
            raise UserError(Words("refused-approval-elsewhere"))
        run = short_run_id(approval.run_id)
        if approval.status is not ApprovalStatus.PENDING:
            raise UserError(Words("refused-approval-settled", {"run": run, "status": approval.status.value}))
        asked = await self._ctx.repos.runs.get(approval.run_id)
        if asked is None or not await self._awaits_decisions(asked):  # ended another way (its caller's end)
            await self.runs_ended([approval.run_id])
            raise UserError(Words("refused-approval-run-finished", {"run": run}))
        verb = "approve" if approve else "deny"
        owner = approval.owner_user_id
        moderator = actor.is_moderator and actor.guild_id == asked.guild_id  # a moderator of the run's server
        if owner != actor.user_id and not moderator:
            raise UserError(Words("refused-approval-not-yours", {"verb": verb, "run": run, "owner": f"<@{owner}>"}))
        status = ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED
        audit = None
        if owner != actor.user_id:
            audit = AuditEntry(asked.guild_id, actor.user_id, owner, verb, approval.run_id, approval.tool_name, 0)
        if not await self._settle(approval, status, actor.user_id, audit):
            raise UserError(Words("refused-approval-decided", {"run": run}))
        return Words("approval-decided", {"verb": verb, "tool": approval.tool_name, "run": run})

    async def expire(self, approval_id: str) -> None:
        """The deadline passed with nobody deciding: the call is denied."""
        approval = await self._ctx.repos.approvals.get(approval_id)
        if approval is not None and await self._settle(approval, ApprovalStatus.TIMED_OUT, None, None):
            log.info("approval_timed_out", approval_id=approval_id, run_id=approval.run_id)

    async def _settle(
        self, approval: Approval, status: ApprovalStatus, by: int | None, audit: AuditEntry | None
    ) -> bool:
        """Record a decision; the run goes on once none of its calls is pending."""
        now = self._ctx.clock()
        after = AfterCommit()
        async with self._ctx.repos.db.transaction() as tx:
            if not await self._ctx.repos.approvals.decide(tx, approval.id, status, by, now):
                return False
            if audit is not None:
                await self._ctx.repos.audit.record(tx, replace(audit, created_at=now))
                log.warning("moderator_action", action=audit.action, actor=by, run_id=approval.run_id)
            if not await self._ctx.repos.approvals.count_pending(tx, approval.run_id) and (
                await self._ctx.repos.runs.set_status(
                    tx, approval.run_id, RunStatus.AWAITING_APPROVAL, RunStatus.RUNNING
                )
            ):
                after.wake.append(approval.run_id)
                after.changed.append(approval.run_id)
        self._ctx.timers.cancel(f"approval:{approval.id}")
        log.info("approval_decided", approval_id=approval.id, status=status.value, by=by)
        self._apply(after)
        self._changed()
        return True

    async def take_decisions(self, run_id: str) -> DeferredToolResults | None:
        """The decisions a woken run's next turn starts from (``None``: it was woken for something else): a step
        journaled in the store, so a replay takes the decisions the first execution took."""

        async def take(tx: Connection) -> list[tuple[str, str]]:
            decided = await self._ctx.repos.approvals.take_decided(tx, run_id)
            return [(approval.tool_call_id, approval.status.value) for approval in decided]

        decided = await store_step(self._ctx.repos, run_id, "approvals.take", take, json.dumps, json.loads)
        if not decided:
            return None
        return DeferredToolResults(approvals={call: _result(ApprovalStatus(status)) for call, status in decided})

    async def runs_ended(self, run_ids: list[str]) -> None:
        """Runs that were killed: their pending calls are cancelled (and their requests say so)."""
        async with self._ctx.repos.db.transaction() as tx:
            cancelled = await self._ctx.repos.approvals.cancel_for_runs(tx, run_ids, self._ctx.clock())
        for approval_id in cancelled:
            self._ctx.timers.cancel(f"approval:{approval_id}")
        if cancelled:
            self._changed()
