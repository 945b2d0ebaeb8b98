"""``/usage``'s report from the usage ledger: the period's UTC days, every one listed, totals by agent, and the caps
a member's runs count against — ledger rows written through the real repositories into SQLite."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from bot.config import parse_config
from bot.core.budgets.caps import Window
from bot.core.budgets.limits import BudgetLimits
from bot.core.budgets.meter import Budgets
from bot.core.people.usage_report import Period, UsageReports
from storage.db import Database
from storage.repositories import Repositories
from storage.usage import Payer, Spend
from tests import stores
from tests.core_support import context

NOW = datetime(2026, 12, 1, 15, 30, tzinfo=UTC).timestamp()
GUILD, ALICE, BOB = 10, 7, 8
CONFIG = """
[agents.defaults]
model = "test/default"
[agents.list.main]
[agents.list.researcher]
tokens_per_day = 5000
[agents.list.writer]
cost_per_day_usd = 2
[budgets]
member_tokens_per_day = 10000
member_concurrent_runs = 0
server_cost_per_day_usd = 1
"""


@pytest.fixture
async def ledger(tmp_path):
    db = await Database.open(stores.database(tmp_path / "usage.sqlite3"))
    repos = Repositories.over(db)
    config = parse_config(CONFIG)
    clock = lambda: NOW  # noqa: E731
    ctx = context(repos, config, clock)
    reports = UsageReports(ctx, Budgets(ctx, BudgetLimits(ctx)))

    async def spend(day: str, spend: Spend, *, agent="main", user=ALICE, guild=GUILD) -> None:
        async with db.transaction() as tx:
            await repos.usage.add(tx, day, Payer(guild, user, agent), spend)

    yield reports, spend
    await db.close()


def priced(runs=0, tokens_in=0, tokens_out=0, cost="0", unpriced=0, requests=1) -> Spend:
    return Spend(runs, requests, tokens_in, tokens_out, Decimal(cost), unpriced)


async def test_a_week_is_the_last_seven_utc_days_each_listed_even_when_quiet(ledger):
    reports, spend = ledger
    await spend("2026-12-01", priced(runs=2, tokens_in=100, tokens_out=50, cost="0.01"))
    await spend("2026-11-25", priced(runs=1, tokens_in=10, tokens_out=5, cost="0.002"))
    await spend("2026-11-24", priced(runs=9, tokens_in=999))  # the day before the week
    await spend("2026-12-02", priced(runs=9, tokens_in=999))  # after today (a clock that was set back)
    await spend("2026-12-01", priced(runs=5, tokens_in=500), user=BOB)  # someone else
    await spend("2026-12-01", priced(runs=5, tokens_in=500), guild=99)  # another server
    await spend("2026-12-01", priced(runs=5, tokens_in=500), guild=None)  # a DM

    report = await reports.report(guild_id=GUILD, user_id=ALICE, period=Period.WEEK)

    assert [day for day, _ in report.days] == [f"2026-11-{d}" for d in range(25, 31)] + ["2026-12-01"]
    by_day = dict(report.days)
    assert by_day["2026-11-26"] == Spend()
    assert by_day["2026-11-25"] == Spend(1, 1, 10, 5, Decimal("0.002"), 0)
    assert by_day["2026-12-01"] == Spend(2, 1, 100, 50, Decimal("0.01"), 0)
    assert report.total == Spend(3, 2, 110, 55, Decimal("0.012"), 0)


async def test_a_day_is_today_and_a_month_the_last_thirty_days(ledger):
    reports, spend = ledger
    await spend("2026-12-01", priced(runs=1))
    await spend("2026-11-30", priced(runs=2))
    await spend("2026-11-02", priced(runs=4))
    await spend("2026-11-01", priced(runs=8))

    day = await reports.report(guild_id=GUILD, user_id=ALICE, period=Period.DAY)
    assert [d for d, _ in day.days] == ["2026-12-01"] and day.total.runs == 1
    month = await reports.report(guild_id=GUILD, user_id=ALICE, period=Period.MONTH)
    assert len(month.days) == 30 and month.days[0][0] == "2026-11-02" and month.days[-1][0] == "2026-12-01"
    assert month.total.runs == 7


async def test_dm_usage_is_reported_apart_from_any_server(ledger):
    reports, spend = ledger
    await spend("2026-12-01", priced(runs=3), guild=None)
    await spend("2026-12-01", priced(runs=1))

    report = await reports.report(guild_id=None, user_id=ALICE, period=Period.DAY)
    assert report.total.runs == 3


async def test_usage_by_agent_most_tokens_first_with_unpriced_requests_kept_apart(ledger):
    reports, spend = ledger
    await spend("2026-11-30", priced(runs=1, tokens_in=100, cost="0.5"), agent="writer")
    await spend("2026-12-01", priced(runs=1, tokens_in=300, tokens_out=100, cost="0.25"), agent="researcher")
    await spend("2026-12-01", priced(tokens_in=50, unpriced=1), agent="researcher")

    report = await reports.report(guild_id=GUILD, user_id=ALICE, period=Period.WEEK)

    assert report.agents == [
        ("researcher", Spend(1, 2, 350, 100, Decimal("0.25"), 1)),
        ("writer", Spend(1, 1, 100, 0, Decimal("0.5"), 0)),
    ]
    assert report.total.unpriced_requests == 1


async def test_caps_are_the_members_and_servers_and_those_of_the_agents_they_use_with_todays_use(ledger):
    reports, spend = ledger
    await spend("2026-12-01", priced(runs=1, tokens_in=1200, tokens_out=300, cost="0.4"), agent="researcher")
    await spend("2026-12-01", priced(tokens_in=3000, cost="0.3"), agent="researcher", user=BOB)
    await spend("2026-11-30", priced(tokens_in=7000), agent="researcher")  # yesterday: counts in no daily cap

    report = await reports.report(guild_id=GUILD, user_id=ALICE, period=Period.WEEK)

    caps = {cap.key: cap for cap in report.caps}
    assert list(caps) == ["member_tokens_per_day", "server_cost_per_day_usd", "agents.list.researcher.tokens_per_day"]
    assert caps["member_tokens_per_day"].used == 1500 and caps["member_tokens_per_day"].limit == 10000
    assert caps["server_cost_per_day_usd"].used == Decimal("0.7")
    assert caps["agents.list.researcher.tokens_per_day"].used == 4500
    assert all(cap.window is Window.DAY for cap in report.caps)


async def test_with_no_use_the_report_is_all_zeros_and_still_shows_the_caps(ledger):
    reports, _ = ledger
    report = await reports.report(guild_id=GUILD, user_id=ALICE, period=Period.WEEK)
    assert report.total == Spend() and report.agents == [] and all(t == Spend() for _, t in report.days)
    assert [cap.key for cap in report.caps] == ["member_tokens_per_day", "server_cost_per_day_usd"]
    assert all(cap.used == 0 for cap in report.caps)
