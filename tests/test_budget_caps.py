"""The cap arithmetic and its wording, without a database: windows, thresholds, resets and amounts."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from bot.core.budgets.caps import (
    Cap,
    Window,
    amount,
    day_of,
    exhausted,
    first_reached,
    frees_up,
    next_midnight,
    refusal,
    unit_of,
    warning,
    what_of,
)


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def cap(used, limit=100, window=Window.DAY, unit="tokens", **extra) -> Cap:
    return Cap(
        "member_tokens_per_day",
        "your tokens today on this server",
        unit,
        Decimal(limit),
        Decimal(used),
        window,
        **extra,
    )


def test_a_day_is_the_utc_day_and_resets_at_utc_midnight():
    assert day_of(at("2026-12-01T23:59:59")) == "2026-12-01"
    assert day_of(at("2026-12-02T00:00:00")) == "2026-12-02"
    assert next_midnight(at("2026-12-01T18:30:00")) == at("2026-12-02T00:00:00")
    assert next_midnight(at("2026-12-31T00:00:00")) == at("2027-01-01T00:00:00")


def test_a_cap_is_reached_at_its_limit_and_near_from_80_percent_of_a_daily_one():
    assert [cap(used).reached for used in (99, 100, 101)] == [False, True, True]
    assert [cap(used).near for used in (79, 80, 100)] == [False, True, True]
    assert not cap(90, window=Window.HOUR).near  # only daily caps warn


def test_when_a_cap_frees_up_depends_on_its_window():
    now = at("2026-12-01T18:30:00")
    assert frees_up(cap(100), now) == "It resets at 00:00 UTC, in 5h30m"
    hourly = cap(3, 3, Window.HOUR, "runs", frees_at=now + 725)
    assert frees_up(hourly, now) == "One frees up at 18:42 UTC, in 12m5s"
    assert frees_up(cap(2, 2, Window.LIVE, "runs"), now) == "One frees up when one of them ends"


@pytest.mark.parametrize(
    ("unit", "value", "shown"),
    [
        ("tokens", Decimal(1234567), "1,234,567 tokens"),
        ("runs", Decimal(3), "3 runs"),
        ("runs", Decimal(1), "1 run"),
        ("usd", Decimal("1234.5"), "$1,234.50"),
        ("usd", Decimal("2.5"), "$2.50"),
        ("usd", Decimal("0.0042"), "$0.0042"),
        ("usd", Decimal(0), "$0.00"),
    ],
)
def test_amounts_read_in_their_unit(unit, value, shown):
    assert amount(unit, value) == shown


def test_the_refusal_names_the_cap_its_use_and_when_it_frees_up():
    now = at("2026-12-01T22:00:00")
    assert str(refusal(cap(120), now)) == (
        "Over budget: your tokens today on this server: 120 of 100 tokens (member_tokens_per_day). "
        "It resets at 00:00 UTC, in 2h0m."
    )
    worded = replace(cap(120), what=what_of("member_tokens_per_day"))
    assert str(refusal(worded, now)) == str(refusal(cap(120), now))
    assert refusal(worded, now).render("es-ES") == (  # type: ignore[union-attr]
        "Presupuesto agotado: tus tokens de hoy en este servidor: 120 de 100 tokens (member_tokens_per_day). "
        "Se reinicia a las 00:00 UTC, dentro de 2h0m."
    )
    assert exhausted(cap(120)) == "budget exhausted (member_tokens_per_day)"
    assert warning(cap(85), 7, now).startswith("<@7> ⚠️ You have used 85% of your tokens today on this server: ")


def test_zeroclaws_cost_budget_speaks_zeroclaws_words_everywhere():
    spent = Cap(
        "runtime_profiles.p.max_cost_per_day_cents",
        "x",
        "usd",
        Decimal("5"),
        Decimal("5.01234"),
        Window.DAY,
        zeroclaw=True,
    )
    words = "Budget exceeded: $5.0123 of $5.00 Day limit. Cannot make further API calls until the budget resets."
    assert refusal(spent, 0) == exhausted(spent) == words


def test_the_first_reached_cap_is_the_one_reported_and_units_follow_key_names():
    caps = [cap(10), cap(100, window=Window.HOUR), cap(200)]
    assert first_reached(caps) is caps[1]
    assert first_reached([cap(1)]) is None
    assert [unit_of(k) for k in ("member_cost_per_day_usd", "server_tokens_per_day", "member_concurrent_runs")] == [
        "usd",
        "tokens",
        "runs",
    ]
