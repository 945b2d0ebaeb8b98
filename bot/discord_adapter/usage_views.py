"""How ``/usage`` reads in Discord: totals, by agent and the caps as compact text, and the chart when there is one.

A chart only for a week or a month that had any use: one day is a single bar, which the totals say better, and an
empty period is a blank picture. Cost counts priced requests only; requests nobody knows the price of are named,
never counted as free. The words are the asking member's language; the caps' words are defined with the caps
(their refusals use them too).
"""

from __future__ import annotations

import io

import discord
import structlog

from bot.core.budgets.caps import Cap, frees_words, use_words
from bot.core.people.usage_report import Period, UsageReport
from bot.core.stats import format_cost, format_tokens
from bot.discord_adapter.spoken import spoken
from bot.discord_adapter.usage_chart import chart_png
from bot.i18n import localized
from storage.usage import Spend

log = structlog.get_logger(__name__)
MAX_AGENT_LINES = 10


def _period(period: Period, locale: object) -> str:
    match period:
        case Period.DAY:
            return localized("usage-period-day", locale)
        case Period.WEEK:
            return localized("usage-period-week", locale)
        case _:
            return localized("usage-period-month", locale)


def _cost(totals: Spend, locale: object) -> str:
    if totals.unpriced_requests == 0:
        return format_cost(totals.cost)
    if totals.unpriced_requests == totals.requests:
        return localized("usage-cost-none-known", locale)
    return localized("usage-cost-partly", locale, cost=format_cost(totals.cost), count=totals.unpriced_requests)


def _line(totals: Spend, locale: object) -> str:
    tokens = localized(
        "tokens-phrase",
        locale,
        total=format_tokens(totals.tokens),
        input=format_tokens(totals.input_tokens),
        output=format_tokens(totals.output_tokens),
    )
    runs = localized("usage-runs", locale, count=totals.runs)
    requests = localized("usage-requests", locale, count=totals.requests)
    return f"{runs} • {requests} • {tokens} • {_cost(totals, locale)}"


def _cap_line(cap: Cap, now: float, locale: object) -> str:
    line = f"- {spoken(cap.what, locale)}: {use_words(cap).render(locale)} (`{cap.key}`)"
    return f"{line}. {frees_words(cap, now).render(locale)}" if cap.used else line


def render_usage(report: UsageReport, viewer_id: int, locale: object = None) -> str:
    """The report as ``viewer_id`` reads it, in ``locale``'s language.

    The caps are worded for the member they limit."""
    first, last = report.days[0][0], report.days[-1][0]
    span = last if first == last else localized("usage-span", locale, first=first, last=last)
    whose = f"<@{report.user_id}>"
    lines = [localized("usage-title", locale, member=whose, period=_period(report.period, locale), span=span)]
    total = report.total
    lines.append(localized("usage-empty", locale) if total.empty else _line(total, locale))
    if total.unpriced_requests:
        lines.append(localized("usage-unpriced", locale, count=total.unpriced_requests))
    if report.agents:
        lines.append(localized("usage-by-agent", locale))
        lines += [f"- {agent}: {_line(totals, locale)}" for agent, totals in report.agents[:MAX_AGENT_LINES]]
        if len(report.agents) > MAX_AGENT_LINES:
            lines.append(localized("usage-more-agents", locale, count=len(report.agents) - MAX_AGENT_LINES))
    if report.caps:
        if viewer_id == report.user_id:
            lines.append(localized("usage-caps", locale))
        else:
            lines.append(localized("usage-caps-of", locale, member=whose))
        lines += [_cap_line(cap, report.now, locale) for cap in report.caps]
    else:
        lines.append(localized("usage-no-caps", locale))
    return "\n".join(lines)


async def usage_chart(report: UsageReport, locale: object = None) -> discord.File | None:
    """The runs-and-cost chart of a week or month with any use, as an attachment.

    None when drawing it failed: the text says everything the chart does."""
    if report.period is Period.DAY or report.total.empty:
        return None
    try:
        png = await chart_png(report.days, locale)
    except Exception:
        log.exception("usage_chart_failed")
        return None
    description = localized("usage-chart-title", locale, first=report.days[0][0], last=report.days[-1][0])
    return discord.File(io.BytesIO(png), "usage.png", description=description)
