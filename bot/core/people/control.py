"""What people do to runs from Discord: list, inspect, read, kill, send, steer, stop — with the same target
numbering everywhere, and permission decided here: owners act on their own runs, moderators on anyone's
(and every such moderator action is audited). The cog only says who the actor is and whether they moderate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.attachments import steered
from bot.core.context import CoreContext
from bot.core.errors import UnknownTarget, UserError
from bot.core.limits import checked_text
from bot.core.oversight.run_actions import NotActionable, descendants, kill_refusal, live_runs, steer_refusal
from bot.core.oversight.run_authority import RunAuthority
from bot.core.oversight.session_queries import ChildRow, SessionQueries
from bot.core.people.delivery_state import delivery_state
from bot.core.runs.commands import RunCommands
from bot.core.runs.requests import main_session_key
from bot.core.threads.steer_limit import SteerLimit
from bot.i18n import Words
from bot.records import Actor, Attachment, Run, RunKind, RunStatus, short_run_id
from bot.text import has_visible_text

SEND_WAIT_SECONDS = 30.0


def _run_of(row: ChildRow) -> Run | None:
    return row.run


@dataclass(frozen=True)
class Details:
    delivery: Words
    messages: int
    activity: str | None = None  # what the live run is doing now (an ACP agent's tool call or plan)


@dataclass(frozen=True)
class Listing:
    active: list[tuple[int, ChildRow]]
    recent: list[tuple[int, ChildRow]]


class RunControl:
    """Runs as people see and act on them: listed, inspected, read, killed, sent to, steered, stopped."""

    def __init__(
        self,
        ctx: CoreContext,
        commands: RunCommands,
        queries: SessionQueries,
        authority: RunAuthority,
        steer_limit: SteerLimit,
        *,
        send_wait_seconds: float = SEND_WAIT_SECONDS,
    ) -> None:
        self._ctx = ctx
        self._default_agent = ctx.config.agents.default_agent
        self._commands = commands
        self._queries = queries
        self._authority = authority
        self._steer_limit = steer_limit
        self._send_wait = send_wait_seconds

    def _main_key(self, conversation: str) -> str:
        return main_session_key(self._default_agent, conversation)

    async def rows(self, conversation: str) -> list[ChildRow]:
        """Sub-agents of a conversation, numbered as ``list`` shows them: active first, then recent."""
        return await self._queries.children(self._main_key(conversation))

    async def listing(self, conversation: str) -> Listing:
        numbered = list(enumerate(await self.rows(conversation), start=1))
        return Listing(
            active=[(i, r) for i, r in numbered if r.run is not None and not r.run.status.is_terminal],
            recent=[(i, r) for i, r in numbered if r.run is not None and r.run.status.is_terminal],
        )

    async def resolve(self, conversation: str, target: str) -> ChildRow:
        if not has_visible_text(target):
            raise UserError(Words("refused-missing-target"))
        queries = self._queries
        try:
            return queries.resolve_target(await self.rows(conversation), target)
        except UnknownTarget:
            older = await queries.any_child(self._main_key(conversation), target)  # an archived one, by key or id
            if older is None:
                raise
            return older

    async def details(self, row: ChildRow) -> Details:
        """Where the run's announcement stands, and how long its transcript is."""
        delivery = Words("delivery-not-yet")
        if row.run is not None:
            rows = await self._ctx.repos.outbox.for_run(row.run.id)
            if rows:
                delivery = delivery_state(rows)
            elif row.run.status is RunStatus.KILLED:
                delivery = Words("delivery-none-killed")
            elif row.run.status.is_terminal:
                delivery = Words("delivery-none-no-reply")
        activity = await self._ctx.repos.run_activity.get(row.run.id) if row.run is not None else None
        return Details(delivery, await self._ctx.repos.transcripts.count(row.session.key), activity)

    async def target_choices(self, conversation: str) -> list[tuple[int, ChildRow]]:
        """Autocomplete: the conversation's runs by number; the adapter words and filters them."""
        return [(index, row) for index, row in enumerate(await self.rows(conversation), start=1) if row.run]

    async def authorize(self, actor: Actor, row: ChildRow, action: str, detail: str | None = None) -> None:
        """The run's owner may; a moderator may too (audited); anyone else is refused with the owner named."""
        await self._authority.check(actor, row.run, row.label, action, detail)

    async def kill(self, actor: Actor, conversation: str, target: str) -> Words:
        row = await self.resolve(conversation, target)
        if row.run is None or kill_refusal(row.run):
            return Words("run-already-finished", {"label": row.label})
        await self.authorize(actor, row, "kill")
        count = descendants(await self._commands.kill(row.run.id))
        if count is None:
            return Words("run-already-finished", {"label": row.label})
        return Words("killed-run", {"label": row.label, "descendants": count})

    async def kill_all(self, actor: Actor, conversation: str) -> Words:
        """Kill every active sub-agent the actor may kill; a moderator's covers everyone's (audited)."""
        rows = live_runs(await self.rows(conversation), _run_of)
        mine = [(row, run) for row, run in rows if actor.is_moderator or run.requester_user_id == actor.user_id]
        if not mine:
            return Words("kill-all-none") if not rows else Words("kill-all-none-yours")
        stopped = 0
        for row, run in mine:
            await self.authorize(actor, row, "kill")
            stopped += len(await self._commands.kill(run.id))
        return Words("killed-all", {"stopped": stopped, "others": len(rows) - len(mine)})

    async def steer(self, actor: Actor, conversation: str, target: str, message: str) -> Words:
        row = await self.resolve(conversation, target)
        text = checked_text(message, empty=Words("refused-steer-empty"), terse=True)
        run = row.run
        refusal = steer_refusal(run)
        if refusal is NotActionable.WAITING:
            raise UserError(Words("refused-steer-waiting", {"label": row.label}))
        if refusal or run is None:
            raise UserError(Words("run-already-finished", {"label": row.label}))
        if self._steer_limit.wait_left(actor.user_id, run.id) > 0:
            raise UserError(Words("refused-steer-rate"))
        await self.authorize(actor, row, "steer", text[:200])
        self._steer_limit.sent(actor.user_id, run.id)
        if not await self._commands.steer(run.id, text):
            raise UserError(Words("run-already-finished", {"label": row.label}))
        return Words("steered-run", {"label": row.label, "run": run.short_id})

    async def send(
        self, actor: Actor, conversation: str, target: str, message: str, attachments: Sequence[Attachment] = ()
    ) -> Words | str:
        """Message a session without aborting it; wait for its reply (a finished session gets a follow-up run).

        A live run reads ``attachments``' text files with the message; a new run reads images too."""
        row = await self.resolve(conversation, target)
        text = checked_text(message, empty=Words("refused-send-empty"), terse=True)
        live = row.run if row.run is not None and not row.run.status.is_terminal else None
        steer = steered(text, attachments) if live else text
        await self.authorize(actor, row, "send", text[:200])
        if live is not None and self._steer_limit.wait_left(actor.user_id, live.id) > 0:  # it would steer it
            raise UserError(Words("refused-steer-rate"))
        before = await self._queries.assistant_texts(row.session.key) if live else []
        if live and await self._commands.steer(live.id, steer):
            self._steer_limit.sent(actor.user_id, live.id)
            reply: Words | str | None = await self._ctx.signals.wait_for(
                lambda: self._new_reply(row.session.key, len(before)), self._send_wait
            )
            run_id = live.id
        else:
            run_id = await self._commands.follow_up(row.session, text, row.run, attachments=attachments)
            reply = await self._ctx.signals.wait_for(lambda: self._finished_reply(run_id), self._send_wait)
        if reply is None:
            return Words("send-still-running", {"run": short_run_id(run_id)})
        return reply

    async def _new_reply(self, session_key: str, seen: int) -> str | None:
        texts = await self._queries.assistant_texts(session_key)
        return texts[-1] if len(texts) > seen else None

    async def _finished_reply(self, run_id: str) -> Words | str | None:
        run = await self._ctx.repos.runs.get(run_id)
        if run is None or not run.status.is_terminal:
            return None
        if run.status is RunStatus.COMPLETED:
            return run.result_text or Words("send-no-output")
        return Words("send-failed", {"error": run.error or run.status.value, "run": short_run_id(run_id)})

    async def stop(self, actor: Actor, conversation: str) -> Words:
        """Abort the conversation's main-agent turn and every sub-agent, as far as the actor may.

        The abort cascades down each run's children."""
        main_key = self._main_key(conversation)
        turns = [
            run
            for run in await self._ctx.repos.runs.for_session(main_key)
            if run.kind is RunKind.CHAT
            and not run.status.is_terminal
            and (actor.is_moderator or run.requester_user_id == actor.user_id)
        ]
        stopped = 0
        for run in turns:  # a moderator's stop of someone else's turn is audited like any kill
            await self._authority.check(actor, run, "the main agent's turn", "kill")
            stopped += sum(killed.id != run.id for killed in await self._commands.kill(run.id))  # its cascade
        for row, run in live_runs(await self.rows(conversation), _run_of):
            if actor.is_moderator or run.requester_user_id == actor.user_id:
                await self.authorize(actor, row, "kill")
                stopped += len(await self._commands.kill(run.id))
        if not turns and not stopped:
            return Words("stop-nothing-yours") if not actor.is_moderator else Words("stop-nothing")
        return Words("stopped", {"stopped": stopped})
