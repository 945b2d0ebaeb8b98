"""What people do to a server's schedules (``/schedule add|list|remove``): every input checked before anything is
written, with a refusal that says what is wrong; every change audited. Who may (Manage Server) is decided by the
cog, at run time.

A server's schedules are the ones added there and config.toml's whose channel is one of its channels (the cog
names them: the core knows no guilds). Names are unique in a server; config.toml's are removed only there.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import structlog

from bot.core.context import CoreContext
from bot.core.errors import UserError
from bot.core.jobs.schedules import Schedules
from bot.core.limits import MAX_LABEL_CHARS, checked_text
from bot.cron import cron_trigger, time_zone
from bot.i18n import Words
from bot.records import Schedule, ScheduleSource, ScheduleSpec
from bot.text import quoted
from storage.audit import AuditEntry

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ScheduleView:
    schedule: Schedule
    next_at: float | None  # its next firing; None: never again


def in_server(schedule: Schedule, guild_id: int, channel_ids: Collection[int]) -> bool:
    if schedule.source is ScheduleSource.SLASH:
        return schedule.guild_id == guild_id
    return schedule.spec.channel_id in channel_ids


class ScheduleControl:
    def __init__(self, ctx: CoreContext, schedules: Schedules) -> None:
        self._ctx = ctx
        self._schedules = schedules

    async def add(
        self, spec: ScheduleSpec, *, guild_id: int, actor_user_id: int, channel_ids: Collection[int]
    ) -> ScheduleView:
        """A new schedule of this server, firing from the next slot on."""
        spec = self._checked(spec)
        now = self._ctx.clock()
        repository = self._ctx.repos.schedules
        async with self._ctx.repos.db.transaction() as tx:
            if any(s.spec.name == spec.name for s in await repository.all(tx) if in_server(s, guild_id, channel_ids)):
                raise UserError(Words("refused-schedule-exists", {"name": quoted(spec.name)}))
            schedule_id = await repository.add(
                tx, spec, source=ScheduleSource.SLASH, guild_id=guild_id, created_by=actor_user_id, now=now
            )
            detail = (
                f'{spec.name}: cron "{spec.cron}" {spec.timezone}, agent {spec.agent_id}, channel {spec.channel_id}'
            )
            await self._ctx.repos.audit.record(
                tx, AuditEntry(guild_id, actor_user_id, None, "schedule add", None, detail, now)
            )
        schedule = await repository.get(schedule_id)
        assert schedule is not None, "just added"
        self._schedules.arm(schedule)
        log.info("schedule_added", schedule_id=schedule_id, name=spec.name, source="slash", by=actor_user_id)
        return self._view(schedule)

    async def listing(self, guild_id: int, channel_ids: Collection[int]) -> list[ScheduleView]:
        """This server's schedules, by name."""
        schedules = [s for s in await self._ctx.repos.schedules.all() if in_server(s, guild_id, channel_ids)]
        return [self._view(s) for s in sorted(schedules, key=lambda s: (s.spec.name, s.id))]

    async def remove(self, name: str, *, guild_id: int, actor_user_id: int, channel_ids: Collection[int]) -> Schedule:
        named = [view.schedule for view in await self.listing(guild_id, channel_ids) if view.schedule.spec.name == name]
        added = [s for s in named if s.source is ScheduleSource.SLASH]
        if not added:
            if named:
                raise UserError(Words("refused-schedule-in-config", {"name": quoted(name)}))
            raise UserError(Words("refused-no-schedule", {"name": quoted(name)}))
        schedule = added[0]
        now = self._ctx.clock()
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.schedules.remove(tx, schedule.id)
            await self._ctx.repos.audit.record(
                tx, AuditEntry(guild_id, actor_user_id, schedule.created_by, "schedule remove", None, name, now)
            )
        self._schedules.disarm(schedule.id)
        log.info("schedule_removed", schedule_id=schedule.id, name=name, source="slash", by=actor_user_id)
        return schedule

    def _checked(self, spec: ScheduleSpec) -> ScheduleSpec:
        """``spec`` with its text trimmed, or the first refusal: name, time zone, cron, agent, prompt."""
        name = checked_text(spec.name, what="Name", limit=MAX_LABEL_CHARS)
        cron = " ".join(spec.cron.split())
        try:
            time_zone(spec.timezone)
        except ValueError as error:
            raise UserError(f"{error}.") from None
        try:
            cron_trigger(cron, spec.timezone)
        except ValueError as error:
            raise UserError(Words("refused-cron", {"cron": quoted(cron), "error": str(error)})) from None
        if (refusal := self._schedules.agent_refusal(spec.agent_id)) is not None:
            raise UserError(refusal)
        prompt = checked_text(spec.prompt, what="Prompt")
        return ScheduleSpec(name, cron, spec.timezone, spec.agent_id, prompt, spec.channel_id)

    def _view(self, schedule: Schedule) -> ScheduleView:
        return ScheduleView(schedule, self._schedules.next_firing(schedule))
