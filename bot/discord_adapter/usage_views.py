"""How ``/usage`` reads in Discord: totals, by agent and the caps as compact text, and the chart when there is one.

A chart only for a week or a month that had any use: one day is a single bar, which the totals say better, and an
empty period is a blank picture. Cost counts priced requests only; requests nobody knows the price of are named,
never counted as free.
"""

from __future__ import annotations

import io

import discord
import structlog

from bot.core.budgets.caps import Cap, frees_up, use_of
from bot.core.people.usage_report import Period, UsageReport
from bot.core.stats import format_cost, format_tokens
from bot.discord_adapter.usage_chart import chart_png
from storage.usage import Spend

log = structlog.get_logger(__name__)
MAX_AGENT_LINES = 10
PERIOD_WORDS = {Period.DAY: "today", Period.WEEK: "the last 7 days", Period.MONTH: "the last 30 days"}


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _cost(totals: Spend) -> str:
    if totals.unpriced_requests == 0:
        return format_cost(totals.cost)
    if totals.unpriced_requests == totals.requests:
        return "cost unknown"
    return f"{format_cost(totals.cost)} + {_plural(totals.unpriced_requests, 'unpriced request')}"


def _line(totals: Spend) -> str:
    return (
        f"{_plural(totals.runs, 'run')} • {_plural(totals.requests, 'request')} • tokens "
        f"{format_tokens(totals.tokens)} (in {format_tokens(totals.input_tokens)} / out "
        f"{format_tokens(totals.output_tokens)}) • {_cost(totals)}"
    )


def _cap_line(cap: Cap, now: float) -> str:
    line = f"- {cap.what}: {use_of(cap)} (`{cap.key}`)"
    return f"{line}. {frees_up(cap, now)}" if cap.used else line


def render_usage(report: UsageReport, viewer_id: int) -> str:
    """The report as ``viewer_id`` reads it.

    The caps are worded for the member they limit."""
    first, last = report.days[0][0], report.days[-1][0]
    span = last if first == last else f"{first} to {last}"
    lines = [f"**Usage of <@{report.user_id}>, {PERIOD_WORDS[report.period]}** ({span}, UTC)"]
    total = report.total
    lines.append("No runs and no model requests." if total.empty else _line(total))
    if total.unpriced_requests:
        lines.append(
            f"Cost leaves out {_plural(total.unpriced_requests, 'request')} to models with no known price "
            '(`[pricing."<provider>/<model>"]` sets one).'
        )
    if report.agents:
        lines.append("By agent:")
        lines += [f"- {agent}: {_line(totals)}" for agent, totals in report.agents[:MAX_AGENT_LINES]]
        if len(report.agents) > MAX_AGENT_LINES:
            lines.append(f"- and {_plural(len(report.agents) - MAX_AGENT_LINES, 'more agent')}")
    if report.caps:
        lines.append("Caps now:" if viewer_id == report.user_id else f"Caps now, as <@{report.user_id}> reads them:")
        lines += [_cap_line(cap, report.now) for cap in report.caps]
    else:
        lines.append("No caps apply.")
    return "\n".join(lines)


async def usage_chart(report: UsageReport) -> discord.File | None:
    """The runs-and-cost chart of a week or month with any use, as an attachment.

    None when drawing it failed: the text says everything the chart does."""
    if report.period is Period.DAY or report.total.empty:
        return None
    try:
        png = await chart_png(report.days)
    except Exception:
        log.exception("usage_chart_failed")
        return None
    description = f"Runs and cost per day from {report.days[0][0]} to {report.days[-1][0]} (UTC)"
    return discord.File(io.BytesIO(png), "usage.png", description=description)
