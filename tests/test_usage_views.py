"""How ``/usage`` reads: cost that leaves out unpriced requests says so instead of reading as free, many agents
are cut to a readable list, a member with no caps is told, and a day's requests count as use without a run."""

from __future__ import annotations

from decimal import Decimal

from bot.core.people.usage_report import Period, UsageReport, period_days
from bot.discord_adapter.usage_views import MAX_AGENT_LINES, render_usage
from storage.usage import Spend


def report(total: Spend, agents: list[tuple[str, Spend]]) -> UsageReport:
    days = [(day, Spend()) for day in period_days("2026-12-01", Period.WEEK)]
    return UsageReport(user_id=7, period=Period.WEEK, total=total, days=days, agents=agents, caps=[], now=0.0)


def test_unpriced_requests_are_named_not_counted_as_free():
    partly = Spend(runs=2, requests=3, input_tokens=900, output_tokens=100, cost=Decimal("0.02"), unpriced_requests=1)
    unknown = Spend(runs=1, requests=1, input_tokens=10, output_tokens=5, unpriced_requests=1)
    lines = render_usage(report(partly, [("main", partly), ("local", unknown)]), 7).splitlines()
    assert lines[1] == "2 runs • 3 requests • tokens 1.0k (in 900 / out 100) • $0.02 + 1 unpriced request"
    assert lines[2] == (
        'Cost leaves out 1 request to models with no known price (`[pricing."<provider>/<model>"]` sets one).'
    )
    assert lines[5] == "- local: 1 run • 1 request • tokens 15 (in 10 / out 5) • cost unknown"


def test_many_agents_are_cut_to_a_readable_list_and_no_caps_is_said():
    used = Spend(runs=1, requests=1, input_tokens=1)
    agents = [(f"agent{i:02}", used) for i in range(MAX_AGENT_LINES + 3)]
    lines = render_usage(report(used, agents), 7).splitlines()
    agent_lines = [line for line in lines if line.startswith("- agent")]
    assert len(agent_lines) == MAX_AGENT_LINES
    assert lines[-2:] == ["- and 3 more agents", "No caps apply."]


def test_requests_of_a_run_started_the_day_before_count_as_use():
    carried_over = Spend(requests=2, input_tokens=300, output_tokens=30, cost=Decimal("0.003"))
    lines = render_usage(report(carried_over, [("main", carried_over)]), 7).splitlines()
    assert lines[1] == "0 runs • 2 requests • tokens 330 (in 300 / out 30) • $0.0030"
