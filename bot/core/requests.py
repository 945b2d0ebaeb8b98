"""What callers ask the core for and what it answers, and how sessions are named."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from bot.records import Origin, Run, RunKind, RunStatus, Session, SessionMode, short_run_id


@dataclass(frozen=True)
class SpawnRequest:
    agent_id: str
    task: str
    origin: Origin
    model: str | None = None
    thinking: str | None = None
    thread: bool = False


@dataclass(frozen=True)
class SpawnAccepted:
    run_id: str
    session_key: str
    agent_id: str
    mode: SessionMode = SessionMode.RUN

    @property
    def short_run_id(self) -> str:
        return short_run_id(self.run_id)


@dataclass(frozen=True)
class ChatRequest:
    text: str
    origin: Origin


def main_session_key(agent_id: str, conversation: str) -> str:
    """The main session of one conversation, e.g. ``agent:main:discord:channel:123``."""
    return f"agent:{agent_id}:{conversation}"


def subagent_session_key(agent_id: str) -> str:
    return f"agent:{agent_id}:subagent:{uuid.uuid4()}"


def cron_session_key(agent_id: str) -> str:
    """A scheduled job's own session, fresh at every firing (ZeroClaw's ``cron-<uuid>``)."""
    return f"agent:{agent_id}:cron:{uuid.uuid4()}"


def origin_of(run: Run) -> Origin:
    """Work done on behalf of a run answers to the same person (nobody, for a scheduled job from config.toml)
    and place (the conversation key is only needed to name a main session, which a child never creates)."""
    return Origin(user_id=run.requester_user_id, channel_id=run.channel_id, guild_id=run.guild_id, conversation="")


def new_run(
    session: Session,
    kind: RunKind,
    task: str,
    model: str,
    thinking: str | None,
    timeout_seconds: int,
    origin: Origin,
    parent_run_id: str | None,
    now: float,
) -> Run:
    """A queued run of ``session``, answering to ``origin``."""
    return Run(
        id=uuid.uuid4().hex,
        session_key=session.key,
        parent_run_id=parent_run_id,
        kind=kind,
        status=RunStatus.QUEUED,
        task=task,
        model=model,
        thinking=thinking,
        timeout_seconds=timeout_seconds,
        requester_user_id=origin.user_id,
        guild_id=origin.guild_id,
        channel_id=origin.channel_id,
        source_message_id=origin.message_id,
        created_at=now,
    )
