"""What callers ask the core for, what it answers, and how sessions are named."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from bot.records import (
    Attachment,
    Cleanup,
    ControlScope,
    Delegation,
    Origin,
    Run,
    RunKind,
    RunStatus,
    Session,
    SessionKind,
    SessionMode,
    SessionRole,
    SpawnSite,
    short_run_id,
)


@dataclass(frozen=True)
class SpawnRequest:
    agent_id: str
    task: str
    origin: Origin
    model: str | None = None
    thinking: str | None = None
    thread: bool = False
    runtime: str = "subagent"  # or "acp": ``agent_id`` names an ACP agent
    attachments: tuple[Attachment, ...] = ()  # what the person attached, read with the task


@dataclass(frozen=True)
class SpawnAccepted:
    run_id: str
    session_key: str
    agent_id: str
    mode: SessionMode = SessionMode.RUN
    warning: str | None = None  # what the spawn dropped and runs on instead (an agent's unusable model)

    @property
    def short_run_id(self) -> str:
        return short_run_id(self.run_id)


@dataclass(frozen=True)
class ChatRequest:
    text: str
    origin: Origin
    attachments: tuple[Attachment, ...] = ()  # what the person attached, read with the text


def main_session_key(agent_id: str, conversation: str) -> str:
    """The main session of one conversation, e.g. ``agent:main:discord:channel:123``."""
    return f"agent:{agent_id}:{conversation}"


def subagent_session_key(agent_id: str) -> str:
    return f"agent:{agent_id}:subagent:{uuid.uuid4()}"


def cron_session_key(agent_id: str) -> str:
    """A scheduled job's own session, fresh at every firing (``cron`` and a new uuid)."""
    return f"agent:{agent_id}:cron:{uuid.uuid4()}"


def delegated_session(
    caller: Session,
    agent_id: str,
    role: SessionRole,
    prompt: str,
    origin: Origin,
    now: float,
    *,
    sandboxed: bool,
    delegation: Delegation,
    spawn_site: SpawnSite,
    charged_to: str,
) -> Session:
    """A child session an agent's tool launches for itself (``spawn_subagent``, ``delegate``): one level below its
    caller, answering only the caller, archived once its run ends."""
    return Session(
        key=subagent_session_key(agent_id),
        agent_id=agent_id,
        kind=SessionKind.SUBAGENT,
        depth=caller.depth + 1,
        role=role,
        control_scope=ControlScope.NONE if role == SessionRole.LEAF else ControlScope.CHILDREN,
        task=prompt,
        requester_session_key=caller.key,
        label=None,
        guild_id=origin.guild_id,
        channel_id=origin.channel_id,
        owner_user_id=origin.user_id,
        created_at=now,
        cleanup=Cleanup.DELETE,
        sandboxed=sandboxed,
        delegation=delegation,
        spawn_site=spawn_site,
        charged_to=charged_to,
    )


def origin_of(run: Run) -> Origin:
    """Where work done on behalf of a run answers: the same person and place.

    The person is nobody for a scheduled job from config.toml. The conversation key is only needed to name a main
    session, which a child never creates, so it stays empty."""
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
