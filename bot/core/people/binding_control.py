"""What people do to thread bindings: ``/focus``, ``/unfocus``, ``/agents``, ``/session idle|max-age``.
Permissions are decided here: the person who bound a thread, the run's owner, or a moderator."""

from __future__ import annotations

from dataclasses import replace

from bot.config import ThreadBindingSettings
from bot.core.context import CoreContext
from bot.core.errors import EphemeralSession, SessionArchived, UserError
from bot.core.guild_settings import GuildSettings, binding_gate
from bot.core.oversight.session_queries import ChildRow
from bot.core.people.control import RunControl
from bot.core.threads.bindings import ThreadBindings
from bot.core.threads.port import (
    ThreadPort,
    ThreadUnavailable,
    auto_archive_minutes,
    intro_text,
    thread_name,
)
from bot.core.timers import instant
from bot.durations import LONGEST, DurationTooLong, format_duration, parse_duration
from bot.i18n import Words
from bot.records import Actor, Binding
from bot.text import quoted

UNFOCUS_FAREWELL = "⚙️ Thread unfocused. Messages here will no longer be routed."
NOT_FOCUSED = Words("not-focused")


def _iso(timestamp: float) -> str:
    return instant(timestamp).strftime("%Y-%m-%d %H:%M UTC")


class BindingControl:
    """Focus, unfocus and a binding's lifetimes, as people ask for them."""

    def __init__(
        self,
        ctx: CoreContext,
        runs: RunControl,
        guild_settings: GuildSettings,
        bindings: ThreadBindings,
        threads: ThreadPort | None,
    ) -> None:
        self._ctx = ctx
        self._runs = runs
        self._guild_settings = guild_settings
        self._bindings = bindings
        self._threads = threads

    def _port(self) -> ThreadPort:
        if self._threads is None:
            raise UserError(Words("refused-no-threads"))
        return self._threads

    async def focus(
        self,
        actor: Actor,
        *,
        conversation: str,
        target: str,
        channel_id: int,
        parent_channel_id: int | None,
        is_dm: bool,
    ) -> Words:
        """Bind this thread (``parent_channel_id`` is its channel) or DM to the target's session; in a channel,
        create a thread for it. Focusing is talking to a session: its owner or a moderator only."""
        row = await self._runs.resolve(conversation, target)
        here = parent_channel_id is not None or is_dm
        current = await self._ctx.repos.bindings.get(channel_id) if here else None
        if current is not None and current.bound_by not in (None, actor.user_id) and not actor.is_moderator:
            raise UserError(Words("refused-binding-not-yours", {"who": f"<@{current.bound_by}>", "what": "refocus"}))
        await self._runs.authorize(actor, row, "focus")
        if row.session.archived_at is not None:
            raise SessionArchived(row.session.key, row.session.archived_at, self._ctx.clock())
        if row.session.delegation is not None:
            raise EphemeralSession(row.session.key)
        settings = (await self._guild_settings.effective(actor.guild_id)).thread_bindings
        if not settings.enabled:
            raise UserError(binding_gate(settings) or Words("refused-bindings-off"))
        if here:
            binding = self._new_binding(channel_id, parent_channel_id, row, actor.user_id, settings)
            await self._bindings.bind(binding)
            return Words("focused-here", {"session": row.session.key})
        if refusal := binding_gate(settings):
            raise UserError(refusal)
        try:
            ref = await self._port().create_thread(
                channel_id,
                thread_name(row.label),
                auto_archive_minutes(settings.idle_hours * 3600, settings.auto_archive_minutes),
            )
        except ThreadUnavailable as unavailable:
            raise UserError(Words("refused-thread-unavailable", {"reason": str(unavailable)})) from None
        binding = self._new_binding(ref.thread_id, ref.parent_channel_id, row, actor.user_id, settings)
        await self._bindings.bind(binding)
        await self._port().post(ref.thread_id, intro_text(row.label, binding.idle_seconds, binding.max_age_seconds))
        return Words("focused-new-thread", {"thread": f"<#{ref.thread_id}>", "session": row.session.key})

    def _new_binding(
        self, thread_id: int, parent: int | None, row: ChildRow, user_id: int, settings: ThreadBindingSettings
    ) -> Binding:
        now = self._ctx.clock()
        return Binding(
            thread_id=thread_id,
            parent_channel_id=parent,
            guild_id=row.session.guild_id,
            session_key=row.session.key,
            bound_by=user_id,
            bound_at=now,
            last_activity_at=now,
            idle_seconds=settings.idle_hours * 3600,
            max_age_seconds=settings.max_age_hours * 3600,
        )

    async def _binding_here(self, channel_id: int) -> Binding | None:
        return await self._ctx.repos.bindings.get(channel_id)

    async def _may_manage(self, actor: Actor, binding: Binding, what: str) -> None:
        if actor.is_moderator or binding.bound_by == actor.user_id:
            return
        latest = await self._ctx.repos.runs.latest_for_session(binding.session_key)
        owner = latest.requester_user_id if latest else None
        if owner == actor.user_id:
            return
        who = binding.bound_by if binding.bound_by is not None else owner
        raise UserError(Words("refused-binding-not-yours", {"who": f"<@{who}>", "what": what}))

    async def unfocus(self, actor: Actor, channel_id: int) -> Words:
        binding = await self._binding_here(channel_id)
        if binding is None:
            return NOT_FOCUSED
        await self._may_manage(actor, binding, "unfocus")
        await self._bindings.unbind(channel_id, farewell=UNFOCUS_FAREWELL)
        return Words("unfocused")

    async def agents(self, conversation: str) -> list[tuple[int, ChildRow, list[int]]]:
        """Active, waiting and bound sub-agents of this conversation: number, row, bound thread ids (none: unbound)."""
        found = []
        for index, row in enumerate(await self._runs.rows(conversation), start=1):
            bindings = await self._ctx.repos.bindings.for_session(row.session.key)
            live = row.run is not None and not row.run.status.is_terminal
            if live or bindings:
                found.append((index, row, [b.thread_id for b in bindings]))
        return found

    async def lifetime(self, actor: Actor, channel_id: int, which: str, value: str | None) -> Words:
        """Show or set ``idle`` or ``max-age`` for the binding of this conversation."""
        binding = await self._binding_here(channel_id)
        if binding is None:
            return NOT_FOCUSED
        idle = which == "idle"
        seconds = binding.idle_seconds if idle else binding.max_age_seconds
        if value is None:
            if seconds <= 0:
                return Words("lifetime-off", {"which": which})
            start = binding.last_activity_at if idle else binding.bound_at
            shown = {"which": which, "duration": format_duration(seconds), "at": _iso(start + seconds)}
            return Words("lifetime-shown", shown)
        try:
            new = parse_duration(value)
        except ValueError as invalid:
            longest = LONGEST if isinstance(invalid, DurationTooLong) else "none"
            refused = {"value": quoted(value), "longest": longest, "which": which}
            raise UserError(Words("refused-duration", refused)) from None
        await self._may_manage(actor, binding, "update")
        now = self._ctx.clock()
        changed = (
            replace(binding, idle_seconds=new, last_activity_at=now)
            if idle
            else replace(binding, max_age_seconds=new, bound_at=now)
        )
        await self._bindings.bind(changed)
        if new <= 0:
            return Words("lifetime-disabled", {"which": which})
        return Words("lifetime-set", {"which": which, "duration": format_duration(new), "at": _iso(now + new)})
