"""Durations for /session idle and /session max-age."""

import pytest

from bot.durations import LONGEST, MAX_DURATION_SECONDS, DurationTooLong, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90m", 5400),
        ("2h", 7200),
        ("1d", 86400),
        ("3", 10800),
        ("1.5", 5400),
        ("45s", 45),
        ("off", 0),
        ("0", 0),
        ("disable", 0),
        ("none", 0),
        (" 2H ", 7200),
    ],
)
def test_parse(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "-1h", "2 weeks", "1w", ""])
def test_bad_values_raise(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("text", ["365d", "8760", "8760h", "525600m"])
def test_the_longest_duration_is_365_days(text):
    assert parse_duration(text) == MAX_DURATION_SECONDS == 365 * 86400
    assert LONGEST == "365d"


@pytest.mark.parametrize("text", ["366d", "8760.01", "99999999999", "9" * 400, "100000000d", "1" + "0" * 6000 + "s"])
def test_longer_durations_are_refused_as_too_long(text):
    with pytest.raises(DurationTooLong):
        parse_duration(text)


def test_format():
    assert [format_duration(s) for s in (0, 30, 2700, 5400, 86400)] == ["disabled", "<1m", "45m", "1.5h", "24h"]
