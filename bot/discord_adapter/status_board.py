"""A live status message for each run started from a channel: state, runtime, tool calls and tokens, with Kill
and Steer buttons; edited at most once per interval per run (llmcord's throttled edits), finalised when the
run ends — also after a restart, since where each message lives is stored in the database.

Every process on the store runs a board, and any of them may be told a run changed (a kill or a child's end settled
there), so only the process that owns the run (``runs.executor_id``: the one executing it) posts its message — the
send has no nonce, and two boards finding no message yet would post two, one of them never finalised. A run has one
owner at a time, so it is posted once with no claim to take; whoever is told of a change edits the message, and
every edit renders the run as the database has it, in its server's preferred language."""

from __future__ import annotations

import time
from collections.abc import Callable

import discord
import structlog
from pydantic_ai.messages import ModelResponse, ToolCallPart

from bot.core.oversight.session_queries import run_label
from bot.core.stats import format_runtime, format_tokens
from bot.discord_adapter.rounds import Rounds
from bot.discord_adapter.run_words import board_state, waiting_on
from bot.discord_adapter.server_locale import server_locale
from bot.i18n import localized
from bot.records import Run, RunStatus
from storage.repositories import Repositories
from storage.status_messages import StatusMessageRepository

log = structlog.get_logger(__name__)


class StatusBoard:
    def __init__(
        self,
        client: discord.Client,
        repos: Repositories,
        messages: StatusMessageRepository,
        executor_id: str,
        *,
        controls: Callable[[str], discord.ui.View],
        interval: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``controls``: the Kill and Steer buttons a live run's message carries, those the bot registered."""
        self._client = client
        self._repos = repos
        self._db = repos.db
        self._messages = messages
        self._executor_id = executor_id
        self._controls = controls
        self._interval = interval
        self._clock = clock
        self._dirty: set[str] = set()
        self._rounds = Rounds("status-board", self._refresh_dirty, interval=interval)

    def run_changed(self, run_id: str) -> None:
        self._dirty.add(run_id)
        self._rounds.wake()

    async def start(self) -> None:
        """Finalise messages of runs that ended while the bot was down; follow live runs."""
        self._dirty.update(await self._messages.unfinished())
        self._rounds.start()

    async def close(self) -> None:
        await self._rounds.close()

    async def _refresh_dirty(self) -> None:
        batch, self._dirty = self._dirty, set()
        for run_id in batch:
            try:
                await self._refresh(run_id)
            except discord.HTTPException as error:
                log.warning("status_message_failed", run_id=run_id, error=repr(error))

    async def _refresh(self, run_id: str) -> None:
        run = await self._repos.runs.get(run_id)
        if run is None:
            return
        session = await self._repos.sessions.get(run.session_key)
        if session is None or session.depth != 1:
            return
        existing = await self._messages.get(run_id)
        if existing is not None and existing.final:
            return
        kind = f" [{session.delegation.kind} {session.agent_id}]" if session.delegation else ""
        content = await self._render(run, run_label(session) + kind)
        finished = run.status.is_terminal
        channel = self._client.get_partial_messageable(run.channel_id)
        if existing is None:
            if finished:
                return  # it ended before its first status: the announcement says everything
            if await self._repos.runs.owner(run.id) != self._executor_id:
                return  # its process posts it
            message = await channel.send(
                content, view=self._controls(run.id), allowed_mentions=discord.AllowedMentions.none()
            )
            async with self._db.transaction() as tx:
                await self._messages.add(tx, run.id, run.channel_id, message.id)
            return
        view = None if finished else self._controls(run.id)
        await channel.get_partial_message(existing.message_id).edit(content=content, view=view)
        if finished:
            async with self._db.transaction() as tx:
                await self._messages.mark_final(tx, run.id)

    async def _render(self, run: Run, label: str) -> str:
        messages = await self._repos.transcripts.for_run(run.id)
        responses = [m for m in messages if isinstance(m, ModelResponse)]
        tool_calls = sum(isinstance(p, ToolCallPart) for m in responses for p in m.parts)
        tokens = sum(m.usage.input_tokens + m.usage.output_tokens for m in responses)
        if run.status.is_terminal:
            tokens = run.usage.input_tokens + run.usage.output_tokens
        runtime = format_runtime((run.ended_at or self._clock()) - run.started_at) if run.started_at else "0s"
        locale = server_locale(self._client, run.channel_id, run.guild_id)
        state = board_state(run.status, locale)
        if run.status is RunStatus.WAITING_CHILDREN:
            state = waiting_on(await self._repos.runs.count_unsettled_children(run.id), locale)
        activity = None if run.status.is_terminal else await self._repos.run_activity.get(run.id)
        line = localized(
            "status-board-line",
            locale,
            icon=run.status.icon,
            label=label,
            state=state,
            runtime=runtime,
            calls=tool_calls,
            tokens=format_tokens(tokens),
        )
        run_line = localized("status-board-run", locale, run=run.short_id)
        return f"{line}\n" + (f"{activity}\n" if activity else "") + f"-# {run_line}"
