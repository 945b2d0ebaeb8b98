"""A run's status, tokens and cost in a reader's language: the words posts and views share.

The core keeps these facts as data and English (the model reads English); these put them in the reader's words.
"""

from __future__ import annotations

from bot.core.runs.announcements import INTERRUPTED_REASON, Outcome
from bot.core.stats import format_cost, format_runtime, format_tokens
from bot.i18n import localized
from bot.records import RunStatus, Usage


def status_word(status: RunStatus, locale: object) -> str:
    """One status in a word or two: ``running``, ``done``, ``awaiting approval``."""
    match status:
        case RunStatus.QUEUED:
            return localized("run-status-queued", locale)
        case RunStatus.RUNNING:
            return localized("run-status-running", locale)
        case RunStatus.WAITING_CHILDREN:
            return localized("run-status-waiting", locale)
        case RunStatus.AWAITING_APPROVAL:
            return localized("run-status-awaiting-approval", locale)
        case RunStatus.COMPLETED:
            return localized("run-status-done", locale)
        case RunStatus.FAILED:
            return localized("run-status-failed", locale)
        case RunStatus.TIMED_OUT:
            return localized("run-status-timed-out", locale)
        case RunStatus.KILLED:
            return localized("run-status-killed", locale)
        case _:
            return localized("run-status-interrupted", locale)


def board_state(status: RunStatus, locale: object) -> str:
    """A live status message's state: as :func:`status_word`, but a finished run reads ``completed``."""
    return localized("run-status-completed", locale) if status is RunStatus.COMPLETED else status_word(status, locale)


def waiting_on(children: int, locale: object) -> str:
    return localized("run-waiting-on", locale, count=children)


def _ordinal_kind(number: int) -> str:
    """English's ordinal category of ``number`` (``one`` for 1st, 21st …); Fluent selects a suffix by it."""
    if 10 <= number % 100 <= 20:
        return "other"
    return {1: "one", 2: "two", 3: "few"}.get(number % 10, "other")


def queued_place(place: int, locale: object) -> str:
    return localized("run-queued-place", locale, place=place, kind=_ordinal_kind(place))


def outcome_line(status: RunStatus, error: str | None, locale: object) -> str:
    """How a settled run ended: ``completed successfully``, ``failed: <error>``; the error itself as recorded."""
    match status:
        case RunStatus.COMPLETED:
            return localized("outcome-completed", locale)
        case RunStatus.TIMED_OUT:
            return localized("outcome-timed-out", locale)
        case RunStatus.KILLED:
            return localized("outcome-killed", locale)
        case RunStatus.INTERRUPTED:
            if error is None or error == INTERRUPTED_REASON:
                return localized("outcome-interrupted-restart", locale)
            return localized("outcome-interrupted", locale, error=error)
        case _:
            if error is None:
                return localized("outcome-failed-unknown", locale)
            return localized("outcome-failed", locale, error=error)


def tokens_phrase(usage: Usage, locale: object) -> str:
    """Tokens as every view writes them: ``tokens 1.5k (in 1.2k / out 300)``."""
    return localized(
        "tokens-phrase",
        locale,
        total=format_tokens(usage.input_tokens + usage.output_tokens),
        input=format_tokens(usage.input_tokens),
        output=format_tokens(usage.output_tokens),
    )


def stats_line(outcome: Outcome, locale: object) -> str:
    """Runtime and tokens; the estimated cost when known (unknown is not $0); the fallback model that served it."""
    parts = [
        localized("stats-runtime", locale, runtime=format_runtime(outcome.runtime_seconds)),
        tokens_phrase(outcome.usage, locale),
    ]
    if outcome.usage.cost is not None:
        parts.append(localized("stats-cost", locale, cost=format_cost(outcome.usage.cost)))
    if outcome.fallback_model is not None:
        parts.append(localized("stats-served-by", locale, model=outcome.fallback_model))
    return " • ".join(parts)
