"""What a member spent over a period, read back from the usage ledger.

``/usage`` shows it: totals, by agent, by day, and the caps a run of theirs counts against now.

The ledger counts UTC days, so a period is whole UTC days ending today. Every day of the period is listed, a quiet
one as zeros, so a chart of it has no gaps that read as missing data. Caps are those of the default agent
and of every agent the member used in the period: member and server caps are the same whichever agent runs, while
an agent's own caps (its tokens and cost a day) stop only runs of that agent, so they are shown for the agents the
member actually uses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from enum import StrEnum

from bot.core.budgets.caps import Cap, day_of
from bot.core.budgets.meter import Budgets
from bot.core.context import CoreContext
from storage.usage import Payer, Spend, UsageRow, total


class Period(StrEnum):
    DAY = "day"  # today (UTC)
    WEEK = "week"  # the last 7 days, today included
    MONTH = "month"  # the last 30 days, today included

    @property
    def length(self) -> int:
        return {Period.DAY: 1, Period.WEEK: 7, Period.MONTH: 30}[self]


def period_days(today: str, period: Period) -> list[str]:
    """The UTC days of ``period`` ending with ``today``, oldest first."""
    last = date.fromisoformat(today)
    return [(last - timedelta(days=back)).isoformat() for back in reversed(range(period.length))]


def _total(rows: Iterable[UsageRow]) -> Spend:
    return total(row.spend for row in rows)


@dataclass(frozen=True)
class UsageReport:
    user_id: int
    period: Period
    total: Spend
    days: list[tuple[str, Spend]]  # every day of the period, oldest first
    agents: list[tuple[str, Spend]]  # the agents used in the period, most tokens first
    caps: list[Cap]  # every cap a run of the member counts against now, with its use
    now: float


class UsageReports:
    def __init__(self, ctx: CoreContext, budgets: Budgets) -> None:
        self._ctx = ctx
        self._budgets = budgets

    async def report(self, *, guild_id: int | None, user_id: int, period: Period) -> UsageReport:
        """What ``user_id`` spent in a server (in DMs when ``guild_id`` is ``None``) over ``period``."""
        now = self._ctx.clock()
        days = period_days(day_of(now), period)
        stored = await self._ctx.repos.usage.member_days(guild_id=guild_id, user_id=user_id, since_day=days[0])
        rows = [row for row in stored if row.day <= days[-1]]
        agents = {row.agent_id for row in rows}
        by_agent = sorted(
            ((agent, _total(row for row in rows if row.agent_id == agent)) for agent in agents),
            key=lambda item: (-item[1].tokens, -item[1].runs, item[0]),
        )
        return UsageReport(
            user_id=user_id,
            period=period,
            total=_total(rows),
            days=[(day, _total(row for row in rows if row.day == day)) for day in days],
            agents=by_agent,
            caps=await self._caps(guild_id, user_id, [agent for agent, _ in by_agent]),
            now=now,
        )

    async def _caps(self, guild_id: int | None, user_id: int, agents: list[str]) -> list[Cap]:
        """The caps of the default agent's runs and of the member's agents', each once."""
        found: dict[str, Cap] = {}
        for agent in dict.fromkeys([self._ctx.config.agents.default_agent, *agents]):
            for cap in await self._budgets.caps(Payer(guild_id, user_id, agent)):
                found.setdefault(cap.key, cap)
        return list(found.values())
