"""Domain records shared by the core and storage: sessions, runs, and their truthful states."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING_CHILDREN = "waiting_children"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    KILLED = "killed"
    INTERRUPTED = "interrupted"

    @property
    def is_terminal(self) -> bool:
        return self not in LIVE_STATUSES


LIVE_STATUSES = frozenset({RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_CHILDREN})


class RunKind(StrEnum):
    SPAWN = "spawn"
    CHAT = "chat"
    FOLLOWUP = "followup"


@dataclass(frozen=True)
class Session:
    key: str
    agent_id: str
    kind: str
    depth: int
    role: str
    requester_session_key: str | None
    label: str | None
    guild_id: int | None
    channel_id: int
    owner_user_id: int | None
    created_at: float
    control_scope: str = "none"
    task: str | None = None
    mode: str = "run"
    cleanup: str = "keep"
    sandboxed: bool = False
    archive_at: float | None = None
    archived_at: float | None = None


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    tool_calls: int = 0
    cost: Decimal | None = None


@dataclass(frozen=True)
class Run:
    id: str
    session_key: str
    kind: RunKind
    status: RunStatus
    task: str
    model: str
    thinking: str | None
    timeout_seconds: int
    requester_user_id: int | None
    guild_id: int | None
    channel_id: int
    source_message_id: int | None
    created_at: float
    parent_run_id: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    error: str | None = None
    result_text: str | None = None
    usage: Usage = Usage()

    @property
    def short_id(self) -> str:
        return self.id[:8]
