"""Plain-text views of runs for Discord replies: list lines, info, and transcript logs. Short lines that read
well on a phone, in the language of the member who asked; model text passes through the internal-context choke
point like every other post, and is never translated."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from bot.core.oversight.session_queries import ChildRow
from bot.core.people.control import Listing
from bot.core.runs.internal_context import strip_internal_context
from bot.core.stats import format_cost, format_runtime
from bot.discord_adapter.run_words import queued_place, status_word, tokens_phrase, waiting_on
from bot.i18n import Words, localized
from bot.records import RunStatus, Usage
from bot.text import quoted


def _runtime(row: ChildRow, now: float) -> str:
    run = row.run
    if run is None or run.started_at is None:
        return "0s"
    return format_runtime((run.ended_at or now) - run.started_at)


def row_status(row: ChildRow, locale: object) -> str:
    """``running``, ``waiting on 2 children``, ``queued, 2nd in line``."""
    run = row.run
    if run is None:
        return localized("run-status-unknown", locale)
    if run.status is RunStatus.WAITING_CHILDREN:
        return waiting_on(row.waiting_on, locale)
    if run.status is RunStatus.QUEUED and row.place is not None:
        return queued_place(row.place, locale)
    return status_word(run.status, locale)


def _kind(row: ChildRow, locale: object, *, short: bool) -> str:
    """What started a child an agent's tool runs for itself: ``subagent main`` or ``delegate researcher, task …``."""
    task = localized("run-kind-task", locale, task=row.task_id[:8] if short else row.task_id) if row.task_id else ""
    return f"{localized('session-kind', locale, kind=row.kind)} {row.session.agent_id}{task}"


def list_line(index: int, row: ChildRow, now: float, locale: object = None) -> str:
    run = row.run
    assert run is not None
    usage = run.usage
    tokens = f", {tokens_phrase(usage, locale)}" if usage.input_tokens or usage.output_tokens else ""
    task = "" if row.session.label is None else f" - {run.task[:110]}"
    kind = f" [{_kind(row, locale, short=True)}]" if row.kind else ""
    status = row_status(row, locale)
    return f"{index}. {row.label[:48]}{kind} ({run.model}, {_runtime(row, now)}{tokens}) {status}{task}"


def render_agents(found: list[tuple[int, ChildRow, list[int]]], locale: object = None) -> str:
    """``/agents``: each live or bound sub-agent with its threads, or ``unbound``."""
    lines = [localized("agents-title", locale), "-----"]
    for index, row, threads in found:
        where = ", ".join(f"thread:{thread}" for thread in threads) or localized("agents-unbound", locale)
        lines.append(f"{index}. {row.label} ({where}) {row_status(row, locale)}")
    if not found:
        lines.append(localized("agents-none", locale))
    return "\n".join(lines)


def render_listing(listing: Listing, now: float | None = None, locale: object = None) -> str:
    now = time.time() if now is None else now
    none = localized("runs-none", locale)
    active = [list_line(i, r, now, locale) for i, r in listing.active] or [none]
    recent = [list_line(i, r, now, locale) for i, r in listing.recent] or [none]
    return "\n".join(
        [
            localized("runs-active", locale),
            "-----",
            *active,
            "",
            localized("runs-recent", locale),
            "-----",
            *recent,
        ]
    )


def _when(timestamp: float | None, now: float, locale: object) -> str:
    if timestamp is None:
        return "—"
    iso = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if timestamp > now:
        relative = localized("when-in", locale, span=format_runtime(timestamp - now))
    else:
        relative = localized("when-ago", locale, span=format_runtime(now - timestamp))
    return f"{iso} ({relative}) <t:{int(timestamp)}:R>"


RESULT_PREVIEW_CHARS = 300


def _preview(result: str | None, locale: object) -> str:
    """The start of a run's result; ``—`` while live.

    A killed or interrupted run's result is its partial output."""
    if result is None:
        return "—"
    return quoted(strip_internal_context(result) or localized("internal-context", locale), RESULT_PREVIEW_CHARS)


def usage_line(usage: Usage, locale: object = None) -> str:
    """A run's spending so far: requests, tool calls, tokens, estimated cost.

    A killed or interrupted run keeps what it spent, so this reads the same for it. A cost nobody knows
    is said to be unknown, never shown as $0."""
    if usage.requests == 0:
        return localized("usage-no-requests", locale)
    if usage.cost is not None:
        cost = localized("stats-cost", locale, cost=format_cost(usage.cost))
    else:
        cost = localized("usage-cost-unknown", locale)
    requests = localized("usage-requests", locale, count=usage.requests)
    calls = localized("usage-tool-calls", locale, count=usage.tool_calls)
    return f"{requests} • {calls} • {tokens_phrase(usage, locale)} • {cost}"


def render_info(
    row: ChildRow,
    *,
    delivery: Words,
    transcript_messages: int,
    now: float | None = None,
    activity: str | None = None,
    locale: object = None,
) -> str:
    now = time.time() if now is None else now
    run, session = row.run, row.session
    assert run is not None

    outcome = localized("outcome-status", locale, status=run.status.value) + (f" ({run.error})" if run.error else "")
    if session.archived_at:
        archive = _when(session.archived_at, now, locale)
    elif session.archive_at:
        archive = localized("info-archive-due", locale, when=_when(session.archive_at, now, locale))
    else:
        archive = localized("info-archive-unscheduled", locale)
    model = run.model
    if run.fallback_model:
        model = localized("info-model-served-by", locale, model=run.model, fallback=run.fallback_model)
    role = localized("session-role", locale, role=session.role.value)
    kind = ""
    if row.kind:
        how = localized("delegation", locale, how=session.delegation.value) if session.delegation else None
        kind = _kind(row, locale, short=False) + (f" ({how})" if how else "")
    return "\n".join(
        [
            localized("info-title", locale),
            localized("info-status", locale, value=row_status(row, locale)),
            localized("info-label", locale, value=row.label),
            localized("info-task", locale, value=run.task[:500]),
            localized("info-run", locale, value=run.id),
            localized("info-session", locale, value=session.key),
            localized("info-agent", locale, agent=session.agent_id, depth=session.depth, role=role),
            *([localized("info-runtime-acp", locale, value=f"acp ({session.acp_agent})")] if session.acp_agent else []),
            *([localized("info-now", locale, value=activity)] if activity and not run.status.is_terminal else []),
            *([localized("info-kind", locale, value=kind)] if row.kind else []),
            localized("info-model", locale, value=model),
            localized("info-runtime", locale, value=_runtime(row, now)),
            localized("info-usage", locale, value=usage_line(run.usage, locale)),
            localized("info-created", locale, value=_when(run.created_at, now, locale)),
            localized("info-started", locale, value=_when(run.started_at, now, locale)),
            localized("info-ended", locale, value=_when(run.ended_at, now, locale)),
            localized("info-cleanup", locale, value=localized("cleanup", locale, how=session.cleanup.value)),
            localized("info-archive", locale, value=archive),
            localized("info-outcome", locale, value=outcome),
            localized("info-result", locale, value=_preview(run.result_text, locale)),
            localized("info-delivery", locale, value=delivery.render(locale)),
            localized("info-transcript", locale, count=transcript_messages),
        ]
    )


LOG_ENTRY_CHARS = 1500  # an entry fits one Discord message (2,000 characters) with its role


def _role(role: str, locale: object) -> str:
    match role:
        case "user":
            return localized("log-role-user", locale)
        case "assistant":
            return localized("log-role-assistant", locale)
        case "tool_call":
            return localized("log-role-tool-call", locale)
        case "tool_result":
            return localized("log-role-tool-result", locale)
        case _:
            return localized("log-role-file", locale)


def _log_entry(text: str, locale: object) -> str:
    if len(text) <= LOG_ENTRY_CHARS:
        return text
    marker = localized("log-truncated", locale, characters=len(text), shown=LOG_ENTRY_CHARS)
    return f"{text[:LOG_ENTRY_CHARS]}…{marker}"


def render_log(row: ChildRow, entries: list[dict[str, str]], locale: object = None) -> str:
    """The log of ``entries``, each cut to ``LOG_ENTRY_CHARS`` with a marker where cut."""
    lines = [localized("log-title", locale, label=row.label)]
    for entry in entries:
        text = strip_internal_context(entry["text"]) or localized("internal-context", locale)
        lines.append(f"{_role(entry['role'], locale)}: {_log_entry(text, locale)}")
    if len(lines) == 1:
        lines.append(localized("log-empty", locale))
    return "\n".join(lines)
