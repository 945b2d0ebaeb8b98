"""Every repository over one database.

Built once (in ``bot/app.py``) and handed to whoever needs them."""

from __future__ import annotations

from dataclasses import dataclass

from storage.approvals import ApprovalRepository
from storage.audit import AuditRepository
from storage.bindings import BindingRepository
from storage.db import Database
from storage.delegate_tasks import DelegateTaskRepository
from storage.gauges import GaugeRepository
from storage.guild_budgets import GuildBudgetRepository
from storage.guild_settings import GuildSettingsRepository
from storage.inbox import InboxRepository
from storage.lane_places import LanePlaceRepository
from storage.memories import MemoryRepository
from storage.outbox import OutboxRepository
from storage.processes import ProcessRepository
from storage.retention import RetentionRepository
from storage.run_activity import RunActivityRepository
from storage.run_attachments import RunAttachmentRepository
from storage.run_drafts import RunDraftRepository
from storage.run_files import RunFileRepository
from storage.run_steps import RunStepRepository
from storage.runs import RunRepository
from storage.schedules import ScheduleRepository
from storage.sessions import SessionRepository
from storage.transcripts import TranscriptRepository
from storage.usage import UsageRepository


@dataclass(frozen=True)
class Repositories:
    db: Database
    sessions: SessionRepository
    runs: RunRepository
    transcripts: TranscriptRepository
    outbox: OutboxRepository
    inbox: InboxRepository
    bindings: BindingRepository
    audit: AuditRepository
    guild_settings: GuildSettingsRepository
    delegate_tasks: DelegateTaskRepository
    schedules: ScheduleRepository
    approvals: ApprovalRepository
    usage: UsageRepository
    guild_budgets: GuildBudgetRepository
    retention: RetentionRepository
    processes: ProcessRepository
    run_steps: RunStepRepository
    run_activity: RunActivityRepository
    run_attachments: RunAttachmentRepository
    run_drafts: RunDraftRepository
    memories: MemoryRepository
    run_files: RunFileRepository
    lane_places: LanePlaceRepository
    gauges: GaugeRepository

    @classmethod
    def over(cls, db: Database, executor_id: str | None = None) -> Repositories:
        """``executor_id``: this process's, which owns the runs it admits (``None``: runs owned by no process)."""
        return cls(
            db=db,
            sessions=SessionRepository(db),
            runs=RunRepository(db, executor_id),
            transcripts=TranscriptRepository(db),
            outbox=OutboxRepository(db),
            inbox=InboxRepository(),
            bindings=BindingRepository(db),
            audit=AuditRepository(),
            guild_settings=GuildSettingsRepository(db),
            delegate_tasks=DelegateTaskRepository(db),
            schedules=ScheduleRepository(db),
            approvals=ApprovalRepository(db),
            usage=UsageRepository(db),
            guild_budgets=GuildBudgetRepository(db),
            retention=RetentionRepository(db),
            processes=ProcessRepository(db),
            run_steps=RunStepRepository(db),
            run_activity=RunActivityRepository(db),
            run_attachments=RunAttachmentRepository(db),
            run_drafts=RunDraftRepository(db),
            memories=MemoryRepository(db),
            run_files=RunFileRepository(db),
            lane_places=LanePlaceRepository(db, executor_id),
            gauges=GaugeRepository(db),
        )
