"""Durations for /session idle and /session max-age."""

import pytest

from bot.core.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90m", 5400), ("2h", 7200), ("1d", 86400), ("3", 10800), ("1.5", 5400), ("45s", 45),
     ("off", 0), ("0", 0), ("disable", 0), ("none", 0), (" 2H ", 7200)],
)
def test_parse(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "-1h", "2 weeks", "1w", ""])
def test_bad_values_raise(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_format():
    assert [format_duration(s) for s in (0, 30, 2700, 5400, 86400)] == ["disabled", "<1m", "45m", "1.5h", "24h"]
