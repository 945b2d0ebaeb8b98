"""What a settled run's result becomes, written inside the settling transaction: an announcement in the outbox,
an internal completion event for a requesting run, or context of the conversation's main agent. A completion event
reaches a model's context like a tool result, so it carries the result cut to the tool-result limit."""

from __future__ import annotations

from pydantic_ai.messages import ModelRequest, UserPromptPart

from bot.agents.result_caps import truncated
from bot.core.runs import internal_context
from bot.core.runs.announcements import Announcement, announcement_for, idempotency_key, status_line
from bot.core.stats import stats_line
from bot.records import Run, Session, SessionKind
from storage.db import Connection
from storage.repositories import Repositories


class Results:
    def __init__(self, repos: Repositories, result_max_bytes: int) -> None:
        self._repos = repos
        self._result_max_bytes = result_max_bytes  # what a completion event carries of the result

    def completion_event(self, run: Run, session: Session, now: float, *, posted: bool = False) -> str:
        started = run.started_at if run.started_at is not None else now
        return internal_context.completion_event(
            internal_context.ChildCompletion(
                session_key=session.key,
                run_id=run.id,
                task_label=session.label or run.task[:110],
                status_line=status_line(run.status, run.error),
                result=truncated(run.result_text or "(no output)", self._result_max_bytes),
                stats_line=stats_line(now - started, run.usage, fallback_model=run.fallback_model),
                posted=posted,
            )
        )

    async def announce(
        self, tx: Connection, run: Run, session: Session, requester: Session | None, ended: float
    ) -> Announcement:
        """The announcement, with the conversation's own channel to fall back on.

        The fallback is for a run that answers in a thread, should the thread be gone by then."""
        announcement = announcement_for(run, session, ended_at=ended)
        if requester is not None and requester.channel_id != run.channel_id:
            announcement.fallback_channel_id = requester.channel_id
        await self._repos.outbox.enqueue(
            tx,
            key=idempotency_key(run),
            run_id=run.id,
            channel_id=run.channel_id,
            payload_json=announcement.model_dump_json(),
            now=ended,
        )
        return announcement

    async def tell_run(self, tx: Connection, target: Run, run: Run, session: Session, now: float) -> None:
        """A child's result for the live run that requested it.

        The run reads it at its next step or when it wakes."""
        await self._repos.inbox.add(
            tx, run_id=target.id, source_run_id=run.id, content=self.completion_event(run, session, now), now=now
        )

    async def tell_main_agent(
        self, tx: Connection, run: Run, session: Session, requester: Session | None, now: float
    ) -> None:
        """A posted sub-agent result also becomes context of the conversation's main agent.

        It is there for the agent's next turn, without starting one: it joins the main session's history now, or — while
        a main turn is in progress, so as not to split that turn's messages — as that turn ends. (Replies in a focused
        thread are that thread's conversation, not results: they stay out.)"""
        if session.kind != SessionKind.SUBAGENT or requester is None or requester.kind != SessionKind.MAIN:
            return
        event = self.completion_event(run, session, now, posted=True)
        turn = await self._repos.runs.running_in(tx, requester.key)
        if turn is not None:
            await self._repos.inbox.add(tx, run_id=turn.id, source_run_id=run.id, content=event, now=now)
        else:  # a queued turn loads the history when it starts, so it sees this
            await self._remember(tx, requester.key, [event])

    async def keep_unread(self, tx: Connection, run_id: str, session_key: str, now: float) -> None:
        """Add results that arrived during a main turn to the session's history after it.

        That holds however the turn ends: settled, killed, or interrupted by a restart."""
        events = [content for source, content in await self._repos.inbox.take_pending(tx, run_id, now) if source]
        if events:
            await self._remember(tx, session_key, events)

    async def _remember(self, tx: Connection, session_key: str, events: list[str]) -> None:
        context = ModelRequest(parts=[UserPromptPart(internal_context.wrap(events))])
        await self._repos.transcripts.append(tx, session_key, None, [context])
