"""The one text rule: what counts as empty, what is too long, and how typed input is quoted back."""

import pytest

from bot.core.limits import EmptyText, TextTooLong, checked_text
from bot.core.oversight.session_queries import SessionQueries
from bot.core.timers import EARLIEST, LATEST, instant
from bot.text import has_visible_text, quoted


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t",
        "\u200b\u200b",
        "\u2060",
        "\u200c\u200d",
        "\ufeff",
        "\u00ad",
        "\u202e",  # format (Cf)
        "\u00a0\u3000",
        "\u2002\u205f",
        "\u2028\u2029",  # space and line/paragraph separators (Zs, Zl, Zp)
        "\u0301",
        "\ufe0f",
        "\u034f",  # combining marks with nothing to combine with (Mn)
        "\u3164",
        "\u115f\u1160",
        "\uffa0",
        "\u2800",  # Hangul fillers and the Braille blank
        "\U000e0020\U000e007f",
        "\u2065",
        "\ufff0",  # tags and unassigned default-ignorable code points
    ],
)
def test_text_without_a_visible_character_is_empty(text):
    assert not has_visible_text(text)
    with pytest.raises(EmptyText):
        checked_text(text, limit=100)


@pytest.mark.parametrize(
    "text",
    ["a", "\u200bhi\u200b", "👍", "e\u0301", "👍🏽", "\U0001face", "\ue000", "ㄱ", "⠁", ".", "١"],
)
def test_one_visible_character_is_enough(text):
    assert has_visible_text(text)


def test_checked_text_strips_whitespace_and_measures_what_is_left():
    assert checked_text("  plan it \n", limit=7) == "plan it"
    with pytest.raises(TextTooLong) as long:
        checked_text(" " + "x" * 8 + " ", limit=7)
    assert (long.value.length, long.value.limit) == (8, 7)


def test_quoted_keeps_short_input_and_cuts_long_input_to_one_line_of_80():
    assert quoted("ghost") == "ghost"
    assert quoted("two\nlines  here") == "two lines here"
    assert quoted("x" * 80) == "x" * 80
    assert quoted("x" * 6000) == "x" * 79 + "…"
    assert quoted("abcdef", limit=4) == "abc…"


@pytest.mark.parametrize(
    ("token", "error"),
    [
        ("z" * 6000, "Unknown subagent id: " + "z" * 79 + "…"),
        ("1" * 6000, "Invalid subagent index: " + "1" * 79 + "…"),
        ("#" + "9" * 5000, "Invalid subagent index: #" + "9" * 78 + "…"),
        ("agent:x:" + "k" * 6000, "Unknown subagent session: agent:x:" + "k" * 71 + "…"),
        ("0", "Invalid subagent index: 0"),
        ("39658707", "Unknown subagent id: 39658707"),  # a run id as shown, of digits only: not an index
        ("9999999", "Invalid subagent index: 9999999"),
        ("²", "Unknown subagent id: ²"),
    ],
)
def test_targets_of_any_length_get_a_short_error(token, error):
    with pytest.raises(LookupError) as missing:
        SessionQueries.resolve_target([], token)
    assert str(missing.value) == error


def test_instants_a_datetime_cannot_hold_are_clamped_not_raised():
    assert instant(0).year == 1970
    assert instant(99999999999 * 3600.0) == LATEST
    assert instant(float("inf")) == LATEST
    assert instant(-1e20) == EARLIEST
