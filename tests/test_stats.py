"""The compact stats line an announcement carries."""

from decimal import Decimal

from bot.core.stats import format_runtime, format_tokens, stats_line
from bot.records import Usage


def test_runtime_formats():
    assert format_runtime(0) == "0s"
    assert format_runtime(59.9) == "59s"
    assert format_runtime(312) == "5m12s"
    assert format_runtime(3600 + 120 + 5) == "1h2m"


def test_token_formats():
    assert format_tokens(200) == "200"
    assert format_tokens(1000) == "1.0k"
    assert format_tokens(1234) == "1.2k"
    assert format_tokens(2_500_000) == "2.5m"


def test_stats_line_without_price_says_nothing_about_cost():
    line = stats_line(312, Usage(input_tokens=1000, output_tokens=200))
    assert line == "runtime 5m12s • tokens 1.2k (in 1.0k / out 200)"


def test_stats_line_with_known_price():
    line = stats_line(5, Usage(input_tokens=84, output_tokens=14, cost=Decimal("0.0000210")))
    assert line == "runtime 5s • tokens 98 (in 84 / out 14) • est. cost <$0.0001"
    assert stats_line(5, Usage(cost=Decimal("0.1234"))).endswith("est. cost $0.12")
    assert stats_line(5, Usage(cost=Decimal("0"))).endswith("est. cost $0")


def test_stats_line_names_the_fallback_model_that_served_last():
    line = stats_line(2, Usage(input_tokens=10, output_tokens=5, cost=Decimal("0.02")), fallback_model="fake/gpt-4o")
    assert line == "runtime 2s • tokens 15 (in 10 / out 5) • est. cost $0.02 • served by fake/gpt-4o"
