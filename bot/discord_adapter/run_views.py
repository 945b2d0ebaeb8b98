"""Plain-text views of runs for Discord replies: list lines, info, and transcript logs. Short lines that read
well on a phone; model text passes through the internal-context choke point like every other post."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from bot.core.oversight.session_queries import ChildRow
from bot.core.people.control import Listing
from bot.core.runs.internal_context import strip_internal_context
from bot.core.stats import format_cost, format_runtime, tokens_phrase
from bot.records import Usage
from bot.text import quoted


def _runtime(row: ChildRow, now: float) -> str:
    run = row.run
    if run is None or run.started_at is None:
        return "0s"
    return format_runtime((run.ended_at or now) - run.started_at)


def _kind(row: ChildRow, *, short: bool) -> str:
    """What started a child an agent's tool runs for itself: ``subagent main`` or ``delegate researcher, task …``."""
    task = f", task {row.task_id[:8] if short else row.task_id}" if row.task_id else ""
    return f"{row.kind} {row.session.agent_id}{task}"


def list_line(index: int, row: ChildRow, now: float) -> str:
    run = row.run
    assert run is not None
    usage = run.usage
    tokens = f", {tokens_phrase(usage)}" if usage.input_tokens or usage.output_tokens else ""
    task = "" if row.session.label is None else f" - {run.task[:110]}"
    kind = f" [{_kind(row, short=True)}]" if row.kind else ""
    return f"{index}. {row.label[:48]}{kind} ({run.model}, {_runtime(row, now)}{tokens}) {row.status}{task}"


def render_listing(listing: Listing, now: float | None = None) -> str:
    now = time.time() if now is None else now
    active = [list_line(i, r, now) for i, r in listing.active] or ["(none)"]
    recent = [list_line(i, r, now) for i, r in listing.recent] or ["(none)"]
    return "\n".join(["active subagents:", "-----", *active, "", "recent subagents (last 30m):", "-----", *recent])


def _when(timestamp: float | None, now: float) -> str:
    if timestamp is None:
        return "—"
    iso = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    relative = f"in {format_runtime(timestamp - now)}" if timestamp > now else f"{format_runtime(now - timestamp)} ago"
    return f"{iso} ({relative}) <t:{int(timestamp)}:R>"


RESULT_PREVIEW_CHARS = 300


def _preview(result: str | None) -> str:
    """The start of a run's result; ``—`` while live.

    A killed or interrupted run's result is its partial output."""
    if result is None:
        return "—"
    return quoted(strip_internal_context(result) or "(internal context)", RESULT_PREVIEW_CHARS)


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def usage_line(usage: Usage) -> str:
    """A run's spending so far: requests, tool calls, tokens, estimated cost.

    A killed or interrupted run keeps what it spent, so this reads the same for it. A cost nobody knows
    is said to be unknown, never shown as $0."""
    if usage.requests == 0:
        return "no model requests"
    cost = f"est. cost {format_cost(usage.cost)}" if usage.cost is not None else "cost unknown (no price set)"
    return (
        f"{_plural(usage.requests, 'request')} • {_plural(usage.tool_calls, 'tool call')} • "
        f"{tokens_phrase(usage)} • {cost}"
    )


def render_info(
    row: ChildRow, *, delivery: str, transcript_messages: int, now: float | None = None, activity: str | None = None
) -> str:
    now = time.time() if now is None else now
    run, session = row.run, row.session
    assert run is not None
    outcome = run.status.value + (f" ({run.error})" if run.error else "")
    archive = (
        _when(session.archived_at, now)
        if session.archived_at
        else (f"due {_when(session.archive_at, now)}" if session.archive_at else "not scheduled")
    )
    return "\n".join(
        [
            "ℹ️ Subagent info",
            f"Status: {row.status}",
            f"Label: {row.label}",
            f"Task: {run.task[:500]}",
            f"Run: {run.id}",
            f"Session: {session.key}",
            f"Agent: {session.agent_id} (depth {session.depth}, {session.role})",
            *([f"Runtime: acp ({session.acp_agent})"] if session.acp_agent else []),
            *([f"Now: {activity}"] if activity and not run.status.is_terminal else []),
            *(
                [f"Kind: {_kind(row, short=False)}" + (f" ({session.delegation})" if session.delegation else "")]
                if row.kind
                else []
            ),
            f"Model: {run.model}" + (f" (served by {run.fallback_model})" if run.fallback_model else ""),
            f"Runtime: {_runtime(row, now)}",
            f"Usage: {usage_line(run.usage)}",
            f"Created: {_when(run.created_at, now)}",
            f"Started: {_when(run.started_at, now)}",
            f"Ended: {_when(run.ended_at, now)}",
            f"Cleanup: {session.cleanup}",
            f"Archive: {archive}",
            f"Outcome: {outcome}",
            f"Result: {_preview(run.result_text)}",
            f"Delivery: {delivery}",
            f"Transcript: {transcript_messages} message(s)",
        ]
    )


_ROLES = {
    "user": "User",
    "assistant": "Assistant",
    "tool_call": "Tool call",
    "tool_result": "Tool result",
    "file": "📎 File attached",
}
LOG_ENTRY_CHARS = 1500  # an entry fits one Discord message (2,000 characters) with its role


def _log_entry(text: str) -> str:
    if len(text) <= LOG_ENTRY_CHARS:
        return text
    return f"{text[:LOG_ENTRY_CHARS]}…[truncated: {len(text):,} characters, showing the first {LOG_ENTRY_CHARS:,}]"


def render_log(row: ChildRow, entries: list[dict[str, str]]) -> str:
    """The log of ``entries``, each cut to ``LOG_ENTRY_CHARS`` with a marker where cut."""
    lines = [f"📜 Subagent log: {row.label}"]
    for entry in entries:
        text = strip_internal_context(entry["text"]) or "(internal context)"
        lines.append(f"{_ROLES[entry['role']]}: {_log_entry(text)}")
    if len(lines) == 1:
        lines.append("(no messages)")
    return "\n".join(lines)
