"""Which runs show their answer while it is written, and what they show.

A run streams when its result is posted for people in its channel as it is: a main-agent reply (a voice turn
too), a bound thread's reply, a sub-agent's announcement when a person spawned it (or the config has every
sub-agent announce directly). A result that goes to another agent first is not streamed: people would see words
not meant for them. The text shown is redacted like the final one, and nothing is shown while it could still be
a silent reply (``NO_REPLY``).
"""

from __future__ import annotations

import structlog

from bot.agents.streaming import TextSink
from bot.core.context import CoreContext
from bot.core.drafts.port import DraftPort
from bot.core.guild_settings import GuildSettings
from bot.core.runs import internal_context
from bot.core.runs.announcements import announcement_for
from bot.records import Run, RunKind, RunStatus, Session, SessionKind, SpawnSite

log = structlog.get_logger(__name__)

WRITING = "writing…"


def _maybe_silent(text: str) -> bool:
    """Whether ``text`` could still become a silent reply (showing it would flash it)."""
    shown = text.strip().upper()
    return any(reply.startswith(shown) for reply in internal_context.SILENT_REPLIES)


class LiveAnswers:
    """Hands a run's text, as its model writes it, to the adapter."""

    def __init__(self, ctx: CoreContext, settings: GuildSettings, port: DraftPort | None) -> None:
        self._ctx = ctx
        self._settings = settings
        self._port = port
        self._open: set[str] = set()  # runs whose drafts this process wrote, until they settle

    async def sink(self, run: Run, session: Session) -> TextSink | None:
        """Where ``run``'s text goes while it is written (``None``: nowhere, it is posted when done)."""
        port = self._port
        if port is None or not await self._settings.streams(run.guild_id) or not await self._posted(run, session):
            return None
        draft = announcement_for(run, session, ended_at=self._ctx.clock())
        draft.status, draft.status_line, draft.stats_line = RunStatus.RUNNING, WRITING, None
        self._open.add(run.id)
        redact = self._ctx.redact.text

        def write(text: str) -> None:
            shown = internal_context.strip_internal_context(redact(text))
            if shown.strip() and not _maybe_silent(shown):
                port.write(run.channel_id, draft, shown)

        return write

    async def finished(self, run_id: str) -> None:
        """The turn's model is done: no more of its draft reaches the chat after this returns."""
        if self._port is not None and run_id in self._open:
            await self._port.close(run_id)

    async def settled(self, run_id: str) -> None:
        """After the run's turn settled: a draft no announcement will be posted over is let go of.

        That is a killed run's (its text stays, marked stopped) or a silent reply's (removed)."""
        if self._port is None or run_id not in self._open:
            return
        try:
            run = await self._ctx.repos.runs.get(run_id)
            if run is None or not run.status.is_terminal:
                return  # waits for its children or an approval: its next turn writes on
            self._open.discard(run_id)
            if not await self._ctx.repos.outbox.for_run(run_id):  # else its announcement is posted over the draft
                await self._port.abandon(run_id, stopped=run.status is RunStatus.KILLED)
        except Exception:  # a draft left as it is never stops a run's end
            log.exception("draft_not_let_go", run_id=run_id)

    async def _posted(self, run: Run, session: Session) -> bool:
        """Whether the run's result is posted for people as it is, in its channel."""
        if session.delegation is not None:
            return False
        if run.kind is RunKind.CHAT or (run.kind is RunKind.FOLLOWUP and run.source_message_id is not None):
            return True
        if session.kind != SessionKind.SUBAGENT:
            return False
        if run.parent_run_id is None:  # a person's spawn, a schedule's, a message sent to it
            return True
        if session.spawn_site is not SpawnSite.TOOL:
            return False
        parent = await self._ctx.repos.runs.get(run.parent_run_id)
        requester = await self._ctx.repos.sessions.get(parent.session_key) if parent is not None else None
        direct = self._ctx.config.agents.defaults.subagents.announce == "direct"
        return direct and requester is not None and requester.kind == SessionKind.MAIN
