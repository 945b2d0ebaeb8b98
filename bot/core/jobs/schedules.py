"""Scheduled agent jobs, the ``cron`` spawn site: a schedule fires its agent on a crontab schedule, each firing
a top-level run in a fresh main session of its own (``agent:<agent>:cron:<uuid>``, depth 0, so it may spawn one
level), its prompt headed ``[cron:<id> <name>]``, its answer announced in the schedule's channel through the
outbox like any run's result.

Each slot fires exactly once. A firing claims its slot — ``claimed_through`` moves forward to it, compare-and-set
— in the transaction that persists its run, so a restart, or a second timer racing the first, finds the slot
taken. At start-up a schedule fires the latest slot it missed while the bot was down, once however many it
missed; slots older than :data:`MISSED_SLOT_GRACE_SECONDS` are skipped, and logged. A run cut short by a restart is
resumed, or settled as interrupted, like any other run; its slot does not fire again.

Schedules in config.toml are synced into the table at start-up, by name; people's come from
:mod:`bot.core.people.schedule_control`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import structlog

from bot.agents.models import ModelFactory, UnknownModelError
from bot.config import ScheduleConfig
from bot.core.budgets.meter import OverBudget
from bot.core.context import CoreContext
from bot.core.errors import SpawnRefused
from bot.core.runs.requests import cron_session_key, new_run
from bot.core.runs.spawning import Spawning
from bot.core.timers import skipped_if_bad
from bot.cron import cron_trigger, due, next_slot
from bot.i18n import Words
from bot.records import (
    ControlScope,
    Origin,
    Run,
    RunKind,
    Schedule,
    ScheduleSource,
    ScheduleSpec,
    Session,
    SessionKind,
    SessionRole,
    SpawnSite,
)
from bot.text import quoted
from storage.db import Connection

MISSED_SLOT_GRACE_SECONDS = 24 * 3600  # a slot missed for longer than this is skipped, not fired
LATE_SECONDS = 60  # a firing this long after its slot was missed (the bot was down, or busy)

log = structlog.get_logger(__name__)


class SlotTaken(Exception):
    """Another firing claimed the slot first: the run is not persisted (its transaction rolls back)."""


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat()


def _job_id(schedule_id: int) -> str:
    return f"schedule:{schedule_id}"


def spec_of(entry: ScheduleConfig) -> ScheduleSpec:
    return ScheduleSpec(
        name=entry.name.strip(),
        cron=entry.cron,
        timezone=entry.timezone,
        agent_id=entry.agent,
        prompt=entry.prompt.strip(),
        channel_id=entry.channel_id,
    )


class Schedules:
    def __init__(
        self,
        ctx: CoreContext,
        models: ModelFactory,
        spawning: Spawning,
        *,
        channel_conversation: Callable[[int], str] | None = None,
    ) -> None:
        self._ctx = ctx
        self._channel_conversation = channel_conversation
        self._models = models
        self._spawning = spawning

    async def start(self) -> None:
        """Sync config.toml's schedules, arm their timers, fire what the bot missed while down."""
        await self._sync_config()
        for schedule in await self._ctx.repos.schedules.all():
            with skipped_if_bad("schedule", schedule_id=schedule.id, name=schedule.spec.name):
                self.arm(schedule)
                await self.fire_due(schedule.id)

    def arm(self, schedule: Schedule) -> None:
        trigger = cron_trigger(schedule.spec.cron, schedule.spec.timezone)
        self._ctx.timers.recurring(_job_id(schedule.id), trigger, self.fire_due, schedule.id)

    def disarm(self, schedule_id: int) -> None:
        self._ctx.timers.cancel(_job_id(schedule_id))

    def next_firing(self, schedule: Schedule) -> float | None:
        """When the schedule fires next (``None``: never again)."""
        trigger = cron_trigger(schedule.spec.cron, schedule.spec.timezone)
        return next_slot(trigger, max(schedule.claimed_through, self._ctx.clock()))

    def agent_refusal(self, agent_id: str) -> Words | None:
        """Why ``agent_id`` cannot run a schedule, worded for people; ``None`` if it can."""
        agents = self._ctx.config.agents.list
        if agent_id not in agents:
            return Words("refused-unknown-agent", {"agent": quoted(agent_id), "configured": ", ".join(sorted(agents))})
        if not agents[agent_id].enabled:
            return Words("refused-agent-disabled", {"agent": agent_id})
        return None

    async def fire_due(self, schedule_id: int) -> str | None:
        """Fire the schedule's due slot, if it has one nobody has claimed; the run's id, or ``None``. This is
        what its timer runs, and what start-up runs to catch up."""
        schedule = await self._ctx.repos.schedules.get(schedule_id)
        if schedule is None:  # removed meanwhile
            return None
        spec, now = schedule.spec, self._ctx.clock()
        pending = due(cron_trigger(spec.cron, spec.timezone), schedule.claimed_through, now, MISSED_SLOT_GRACE_SECONDS)
        named = {"schedule_id": schedule.id, "name": spec.name}
        if pending.oldest_skipped is not None:
            log.warning(
                "schedule_skipped",
                **named,
                reason=f"slots missed for more than {MISSED_SLOT_GRACE_SECONDS // 3600}h are not fired",
                oldest_slot=_iso(pending.oldest_skipped),
            )
        refusal = self._cannot_run(spec) if pending.slot is not None else None
        if pending.slot is None or refusal is not None:
            if pending.claim_through > schedule.claimed_through:
                async with self._ctx.repos.db.transaction() as tx:
                    await self._ctx.repos.schedules.claim(tx, schedule.id, pending.claim_through)
            if pending.slot is not None:
                log.warning("schedule_skipped", **named, reason=refusal, slot=_iso(pending.slot))
            return None
        try:
            run = await self._fire(schedule, pending.slot, now)
        except (OverBudget, SpawnRefused) as over:  # passed over, not fired later when the budget or queue allows
            async with self._ctx.repos.db.transaction() as tx:
                await self._ctx.repos.schedules.claim(tx, schedule.id, pending.slot)
            log.warning("schedule_skipped", **named, reason=str(over), slot=_iso(pending.slot))
            return None
        if run is None:
            log.info("schedule_slot_taken", **named, slot=_iso(pending.slot))
            return None
        if pending.slots > 1 or now - pending.slot > LATE_SECONDS:
            late = now - pending.slot
            log.warning("schedule_missed", **named, slot=_iso(pending.slot), slots=pending.slots, late_seconds=late)
        log.info(
            "schedule_fired",
            **named,
            agent_alias=spec.agent_id,
            run_id=run.id,
            spawn_site=SpawnSite.CRON.value,
            slot=_iso(pending.slot),
        )
        return run.id

    async def _fire(self, schedule: Schedule, slot: float, now: float) -> Run | None:
        """Claim ``slot`` and persist its run in one transaction, then queue the run; ``None`` (and nothing
        written) when another firing claimed the slot first; refused while the sub-agent queue is full."""
        await self._spawning.check_queue(schedule.guild_id)  # it waits in the sub-agent lane
        conversation = self._conversation_of(schedule, now)
        session, run = self._firing(schedule, now, conversation.key if conversation else None)

        async def claim(tx: Connection) -> None:
            if not await self._ctx.repos.schedules.claim(tx, schedule.id, slot, run_id=run.id):
                raise SlotTaken()

        try:
            await self._spawning.persist_and_queue(run, conversation, session, also=claim)
        except SlotTaken:
            return None
        return run

    def _cannot_run(self, spec: ScheduleSpec) -> str | None:
        """Why the schedule cannot fire now, or ``None``.

        It cannot when its agent or model is gone from the config."""
        if (refusal := self.agent_refusal(spec.agent_id)) is not None:
            return str(refusal)
        try:
            self._models.resolve(self._model_of(spec.agent_id))
        except UnknownModelError as error:
            return str(error)
        return None

    def _model_of(self, agent_id: str) -> str:
        return self._ctx.config.agents.list[agent_id].model or self._ctx.config.agents.defaults.model

    def _conversation_of(self, schedule: Schedule, now: float) -> Session | None:
        """The main session of the conversation in the schedule's channel: a firing is one of its children, so
        ``/subagents list`` there shows it and ``/stop``, ``/subagents kill`` and its buttons stop it (``None``
        when the chat adapter names no conversations, as in core tests)."""
        if self._channel_conversation is None:
            return None
        channel_id = schedule.spec.channel_id
        origin = Origin(
            user_id=schedule.created_by,
            channel_id=channel_id,
            conversation=self._channel_conversation(channel_id),
            guild_id=schedule.guild_id,
        )
        return self._spawning.main_session(origin, now)

    def _firing(self, schedule: Schedule, now: float, conversation_key: str | None) -> tuple[Session, Run]:
        """A fresh main session of the schedule's agent, and its queued run.

        The run answers to the schedule's creator (nobody, for one from config.toml) in the schedule's channel."""
        spec = schedule.spec
        agent = self._ctx.config.agents.list[spec.agent_id]
        session = Session(
            key=cron_session_key(spec.agent_id),
            agent_id=spec.agent_id,
            kind=SessionKind.MAIN,
            depth=0,
            role=SessionRole.MAIN,
            control_scope=ControlScope.CHILDREN,
            requester_session_key=conversation_key,
            label=spec.name,
            guild_id=schedule.guild_id,
            channel_id=spec.channel_id,
            owner_user_id=schedule.created_by,
            created_at=now,
            task=spec.prompt,
            sandboxed=agent.sandboxed,
            spawn_site=SpawnSite.CRON,
        )
        timeout = agent.subagents.run_timeout_seconds
        if timeout is None:  # it waits in the sub-agent lane, so it is bounded like the sub-agents there
            timeout = self._ctx.config.agents.defaults.subagents.run_timeout_seconds
        origin = Origin(
            user_id=schedule.created_by,
            channel_id=spec.channel_id,
            conversation=session.key,
            guild_id=schedule.guild_id,
        )
        model = self._models.resolve(self._model_of(spec.agent_id)).reference
        task = f"[cron:{schedule.id} {spec.name}] {spec.prompt}"
        return session, new_run(session, RunKind.SPAWN, task, model, None, timeout, origin, None, now)

    async def _sync_config(self) -> None:
        """config.toml's schedules into the table, by name: new ones added, changed ones redefined (a new time
        fires no slot before now), removed ones deleted."""
        wanted = {spec.name: spec for spec in map(spec_of, self._ctx.config.schedules)}
        now = self._ctx.clock()
        repository = self._ctx.repos.schedules
        async with self._ctx.repos.db.transaction() as tx:
            stored = {s.spec.name: s for s in await repository.all(tx) if s.source is ScheduleSource.CONFIG}
            for name in stored.keys() - wanted.keys():
                await repository.remove(tx, stored[name].id)
                log.info("schedule_removed", schedule_id=stored[name].id, name=name, source="config")
            for name, spec in wanted.items():
                current = stored.get(name)
                if current is None:
                    schedule_id = await repository.add(
                        tx, spec, source=ScheduleSource.CONFIG, guild_id=None, created_by=None, now=now
                    )
                    log.info("schedule_added", schedule_id=schedule_id, name=name, source="config")
                elif current.spec != spec:
                    retimed = (current.spec.cron, current.spec.timezone) != (spec.cron, spec.timezone)
                    through = max(current.claimed_through, now) if retimed else current.claimed_through
                    await repository.redefine(tx, current.id, spec, through)
                    log.info("schedule_redefined", schedule_id=current.id, name=name, source="config")
