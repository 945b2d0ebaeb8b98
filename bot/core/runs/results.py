"""What a settled run's result becomes, written inside the settling transaction: an announcement in the outbox,
an internal completion event for a requesting run, or a turn of the conversation's main agent that tells people in
its own voice. A completion event reaches a model's context like a tool result, so it carries the result cut to the
tool-result limit."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import structlog
from pydantic_ai.messages import ModelRequest, UserPromptPart

from bot.agents.result_caps import truncated
from bot.core.context import CoreContext
from bot.core.errors import UserError
from bot.core.runs import internal_context
from bot.core.runs.announcements import (
    VOICE_TASK,
    Announcement,
    PostedFile,
    announcement_for,
    idempotency_key,
    is_voice_turn,
    status_line,
)
from bot.core.runs.requests import new_run
from bot.core.stats import stats_line
from bot.records import Origin, Run, RunKind, Session, SessionKind, SpawnSite
from storage.db import Connection

if TYPE_CHECKING:  # the ports name the settlement, which names these results: imported for annotations only
    from bot.core.runs.ports import Admission

log = structlog.get_logger(__name__)
MainModel = Callable[[str, str], Awaitable[str]]  # (main session key, agent id) → the model of its next turn


def _unused_name(name: str, taken: set[str]) -> str:
    """``name``, or ``report-2.md`` and so on when another file is posted as ``report.md`` already."""
    stem, dot, extension = name.rpartition(".")
    stem, dot, extension = (stem, dot, extension) if stem else (name, "", "")
    number = 2
    candidate = name
    while candidate in taken:
        candidate, number = f"{stem}-{number}{dot}{extension}", number + 1
    return candidate


class Results:
    def __init__(self, ctx: CoreContext, admission: Admission, main_model: MainModel) -> None:
        self._ctx = ctx
        self._repos = ctx.repos
        self._result_max_bytes = ctx.config.tools.result_max_bytes  # what a completion event carries of the result
        self._admission = admission  # a voice turn is a run: it fits the budgets or is not started
        self._main_model = main_model

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

        The fallback is for a run that answers in a thread, should the thread be gone by then. The files its agent
        attached go with it, by name: the adapter reads them from the store when it posts."""
        announcement = announcement_for(run, session, ended_at=ended)
        if requester is not None and requester.channel_id != run.channel_id:
            announcement.fallback_channel_id = requester.channel_id
        announcement.files = await self._files(tx, run, ended)
        await self._repos.outbox.enqueue(
            tx,
            key=idempotency_key(run),
            run_id=run.id,
            channel_id=run.channel_id,
            payload_json=announcement.model_dump_json(),
            now=ended,
        )
        return announcement

    async def _files(self, tx: Connection, run: Run, ended: float) -> list[PostedFile]:
        """What an announcement posts: the run's own files, and a voice turn's also those of the sub-agents whose
        results it read (not those that reached it too late: they were announced with their own files)."""
        files = [PostedFile(name=file.name, size=file.size) for file in await self._repos.run_files.of_run(tx, run.id)]
        told = await self._repos.inbox.sources_taken_before(tx, run.id, ended) if is_voice_turn(run) else []
        for child_id in told:
            for file in await self._repos.run_files.of_run(tx, child_id):
                name = _unused_name(file.name, {posted.name for posted in files})
                stored = None if name == file.name else file.name
                files.append(PostedFile(name=name, size=file.size, run_id=child_id, stored=stored))
        return files

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

    async def main_turn_ended(self, tx: Connection, turn: Run, now: float, *, failed: bool) -> bool:
        """After a main-agent turn: what it did not tell is announced as it is (see :meth:`unvoiced`), and results
        that arrived during it join its session's history. True when announcements were queued."""
        told = await self.unvoiced(tx, turn, now, failed=failed)
        await self.keep_unread(tx, turn.id, turn.session_key, now)
        return told

    async def keep_unread(self, tx: Connection, run_id: str, session_key: str, now: float) -> None:
        """Add results that arrived during a main turn to the session's history after it.

        That holds however the turn ends: settled, killed, or interrupted by a restart."""
        events = [content for source, content in await self._repos.inbox.take_pending(tx, run_id, now) if source]
        if events:
            await self._remember(tx, session_key, events)

    async def _remember(self, tx: Connection, session_key: str, events: list[str]) -> None:
        context = ModelRequest(parts=[UserPromptPart(internal_context.wrap(events))])
        await self._repos.transcripts.append(tx, session_key, None, [context])

    def speaks_for(self, run: Run, session: Session, requester: Session | None) -> bool:
        """Whether the conversation's main agent tells people this run's result, in its own voice.

        So it does for a sub-agent it spawned itself (unless the config says ``direct``); a person's own spawn
        announces directly, and a reply to someone's message in a sub-agent's thread is that thread's answer."""
        if self._ctx.config.agents.defaults.subagents.announce != "main_agent":
            return False
        answers_a_message = run.kind is RunKind.FOLLOWUP and run.source_message_id is not None
        spawned_by_agent = session.kind == SessionKind.SUBAGENT and session.spawn_site is SpawnSite.TOOL
        return (
            spawned_by_agent and not answers_a_message and requester is not None and requester.kind == SessionKind.MAIN
        )

    async def voice(
        self, tx: Connection, run: Run, session: Session, requester: Session | None, now: float
    ) -> list[str]:
        """Hand a sub-agent's result to a main-agent turn that tells the user; the new turns to start (one or none).

        The turn speaks in the conversation's own channel. Completions that arrive before it starts join it, so
        results arriving together are one turn. When no turn can take it (over a budget, no usable model), the
        result is announced as it is."""
        assert requester is not None, "a main agent speaks for the sub-agents of its own session"
        event = self.completion_event(run, session, now)
        inbox, user_id, channel_id = self._repos.inbox, run.requester_user_id, requester.channel_id
        waiting = await self._repos.runs.queued_voice_turn(tx, requester.key, channel_id, user_id)
        if waiting is not None and await inbox.add_while_queued(
            tx, run_id=waiting, source_run_id=run.id, content=event, now=now
        ):
            return []
        origin = Origin(user_id=user_id, channel_id=channel_id, guild_id=run.guild_id, conversation="")
        try:
            model = await self._main_model(requester.key, requester.agent_id)
            turn = new_run(requester, RunKind.CHAT, VOICE_TASK, model, None, 0, origin, None, now)
            await self._admission.admit(tx, turn)
        except UserError as refused:
            log.warning("voice_turn_refused", reason=str(refused), child_run_id=run.id)
            await self.announce(tx, run, session, requester, now)
            return []
        await self._repos.runs.insert(tx, turn)
        await inbox.add(tx, run_id=turn.id, source_run_id=run.id, content=event, now=now)
        log.info("voice_turn_queued", voice_run_id=turn.id, child_run_id=run.id)
        return [turn.id]

    async def unvoiced(self, tx: Connection, turn: Run, now: float, *, failed: bool) -> bool:
        """Announce as they are the results a voice turn did not tell; True when any was queued.

        When it ``failed`` (killed, interrupted, over budget, broke), that is all of them; else those that reached it
        after it started. Each announcement's idempotency
        key is the one the result would have had, so none is posted twice."""
        if not is_voice_turn(turn):
            return False
        queued = False
        for source in await self._repos.inbox.take_sources(tx, turn.id, now, consumed_too=failed):
            child = await self._repos.runs.get(source, tx)
            session = await self._repos.sessions.get(child.session_key) if child else None
            requester = await self._repos.sessions.get(session.requester_session_key or "") if session else None
            if child is not None and session is not None and self.speaks_for(child, session, requester):
                await self.announce(tx, child, session, requester, now)
                queued = True
        if queued:
            log.info("voice_turn_fell_back", voice_run_id=turn.id, failed=failed)
        return queued
