"""What the core asks the outside world to post: a structured announcement, rendered later by an adapter.

Status lines come from the run's recorded outcome, never from model text.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from bot.agents.runner import NO_OUTPUT
from bot.core.stats import stats_line
from bot.records import Run, RunKind, RunStatus, Session, SpawnSite, Usage

INTERRUPTED_REASON = "the bot restarted while this run was in progress"


class PostedFile(BaseModel):
    """A file an agent attached: the adapter reads its bytes from the store when it posts it.

    A voice turn also posts the files of the sub-agents it tells: theirs are stored under their own run."""

    name: str  # as posted
    size: int
    run_id: str | None = None  # the run that stored it (None: the announced run)
    stored: str | None = None  # its name there, when posted under another (None: the same)


class Outcome(BaseModel):
    """A run's outcome and stats as data: the adapter words them in the reader's language.

    ``status_line`` and ``stats_line`` stay the English of the same facts (the model's words, and an older row's)."""

    error: str | None = None
    runtime_seconds: float
    usage: Usage
    fallback_model: str | None = None


class Announcement(BaseModel):
    kind: Literal["completion", "reply"]
    status: RunStatus
    status_line: str
    body: str
    agent_label: str
    run_id: str
    session_key: str
    mention_user_id: int | None = None
    reply_to_message_id: int | None = None
    stats_line: str | None = None
    fallback_channel_id: int | None = None  # a bound thread's parent: where to say so if the thread is gone
    # who speaks: a sub-agent, a scheduled job's run, or the main agent telling what its sub-agents found
    source: Literal["subagent", "schedule", "voice"] = "subagent"
    files: list[PostedFile] = []  # what the agent attached (attach_file), posted with the result
    outcome: Outcome | None = None  # a settled run's (None: a draft, a notice, or a row queued before it was kept)
    # a reply that could not finish: the adapter words why, with what the run had so far (``body`` is the English)
    apology: Literal["restarted", "failed"] | None = None
    partial: str | None = None
    guild_id: int | None = None  # whose preferred language it is posted in (None: a DM)
    words: dict[str, Any] | None = None  # the bot's notice as words (``Words.as_data``), posted in that language


VOICE_TASK = "Tell the user what the sub-agents they asked for found."


def is_voice_turn(run: Run) -> bool:
    """A main-agent turn telling what sub-agents found.

    It answers no message of anyone's; every other main-agent turn answers a person's message."""
    return run.kind is RunKind.CHAT and run.source_message_id is None


def status_line(status: RunStatus, error: str | None) -> str:
    if status is RunStatus.COMPLETED:
        return "completed successfully"
    if status is RunStatus.TIMED_OUT:
        return "timed out"
    if status is RunStatus.INTERRUPTED:
        return f"interrupted: {error or INTERRUPTED_REASON}"
    if status is RunStatus.KILLED:
        return "killed"
    return f"failed: {error or 'unknown error'}"


def idempotency_key(run: Run) -> str:
    return f"announce:v1:{run.session_key}:{run.id}"


def announcement_for(run: Run, session: Session, *, ended_at: float) -> Announcement:
    """Build the announcement for a run that just reached a terminal state.

    ``run`` carries the outcome. A scheduled job's run speaks to its channel, so it mentions nobody."""
    scheduled = session.spawn_site is SpawnSite.CRON
    started = run.started_at if run.started_at is not None else ended_at
    conversational = run.kind is RunKind.CHAT or (run.kind is RunKind.FOLLOWUP and run.source_message_id is not None)
    kind: Literal["completion", "reply"] = "reply" if conversational else "completion"
    partial = run.result_text if run.result_text and run.result_text != NO_OUTPUT else None
    so_far = f"What I had so far:\n\n{partial}" if partial else None
    apology: Literal["restarted", "failed"] | None = None
    if kind == "reply" and run.status is RunStatus.INTERRUPTED:
        body = "I was restarted before I could finish answering this. " + (so_far or "Please ask again.")
        apology = "restarted"
    elif kind == "reply" and run.status is not RunStatus.COMPLETED:
        body = " ".join(filter(None, [f"I couldn't answer: {status_line(run.status, run.error)}.", so_far]))
        apology = "failed" if run.status.is_terminal else None  # a draft of a live run has no apology yet
    else:
        body = run.result_text or "(no output)"
    return Announcement(
        kind=kind,
        status=run.status,
        status_line=status_line(run.status, run.error),
        body=body,
        agent_label=session.label or session.agent_id,
        run_id=run.id,
        session_key=session.key,
        mention_user_id=None if scheduled else run.requester_user_id,
        reply_to_message_id=run.source_message_id,
        stats_line=stats_line(ended_at - started, run.usage, fallback_model=run.fallback_model)
        if kind == "completion"
        else None,
        source="schedule" if scheduled else "voice" if is_voice_turn(run) else "subagent",
        outcome=Outcome(
            error=run.error, runtime_seconds=ended_at - started, usage=run.usage, fallback_model=run.fallback_model
        )
        if run.status.is_terminal
        else None,
        guild_id=run.guild_id,
        apology=apology,
        partial=partial if apology else None,
    )
