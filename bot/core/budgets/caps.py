"""Budget caps as values: what a cap limits, how much of it is used, when it frees up, and how that reads to the
person it stops. Pure arithmetic over numbers the budget room reads, so windows and wording are tested alone.

Daily caps count the UTC day (they reset at midnight UTC); hourly caps count the runs of the last 60 minutes (one
frees up when the oldest leaves the window); the concurrency cap counts runs in progress.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Literal

from bot.core.stats import format_runtime
from bot.i18n import Words

HOUR = 3600.0
WARN_AT = Decimal("0.8")  # a member hears once a day that a daily cap of theirs is this far used

Unit = Literal["runs", "tokens", "usd"]


class Window(StrEnum):
    HOUR = "hour"
    DAY = "day"
    LIVE = "live"  # runs in progress


@dataclass(frozen=True)
class Cap:
    key: str  # the setting that sets it, named in every message about it
    what: Words | str  # whose use of what, in words: "your tokens today on this server" (see ``what_of``)
    unit: Unit
    limit: Decimal
    used: Decimal
    window: Window
    frees_at: float | None = None  # an hourly cap: when the oldest run it counts leaves the window
    zeroclaw: bool = False  # a runtime profile's max_cost_per_day_cents: its refusal keeps the profile's own words

    @property
    def reached(self) -> bool:
        return self.used >= self.limit

    @property
    def near(self) -> bool:
        """At or past the warning threshold of a daily cap."""
        return self.window is Window.DAY and self.used >= self.limit * WARN_AT


def day_of(now: float) -> str:
    """The UTC day ``now`` falls in, as stored in the usage ledger."""
    return datetime.fromtimestamp(now, UTC).date().isoformat()


def next_midnight(now: float) -> float:
    today = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (today + timedelta(days=1)).timestamp()


def what_of(key: str) -> Words:
    """Whose use of what the cap set by ``key`` counts: a ``[budgets]`` key, or an agent's own daily cap."""
    if key.startswith("agents.list."):
        agent, _, setting = key.removeprefix("agents.list.").rpartition(".")
        return Words("cap-agent-today", {"agent": agent, "setting": setting})
    return Words("cap-what", {"key": key})


def amount_words(unit: Unit, value: Decimal) -> Words | str:
    """An amount in its unit; dollars are figures in every language."""
    if unit == "usd":
        return f"${value:.4f}" if 0 < value < Decimal("0.01") else f"${value:,.2f}"
    return Words("cap-amount", {"count": f"{int(value):,}", "unit": unit if value != 1 else unit.removesuffix("s")})


def amount(unit: Unit, value: Decimal) -> str:
    return str(amount_words(unit, value))


def use_words(cap: Cap) -> Words:
    """How much of the cap is used: ``1,205 of 1,000 tokens``, ``$0.80 of $1.00``."""
    used = amount_words(cap.unit, cap.used) if cap.unit == "usd" else f"{int(cap.used):,}"
    return Words("cap-use", {"used": used, "limit": amount_words(cap.unit, cap.limit)})


def use_of(cap: Cap) -> str:
    return str(use_words(cap))


def unit_of(key: str) -> Unit:
    """What a ``[budgets]`` key counts, by its name."""
    if key.endswith("_usd"):
        return "usd"
    return "tokens" if "_tokens_" in key else "runs"


def _clock(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%H:%M UTC")


def frees_words(cap: Cap, now: float) -> Words:
    """When the cap lets the next run or request through."""
    if cap.window is Window.DAY:
        midnight = next_midnight(now)
        return Words("cap-resets", {"at": _clock(midnight), "in": format_runtime(midnight - now)})
    if cap.window is Window.HOUR and cap.frees_at is not None:
        return Words("cap-frees-at", {"at": _clock(cap.frees_at), "in": format_runtime(cap.frees_at - now)})
    return Words("cap-frees-when-one-ends")


def frees_up(cap: Cap, now: float) -> str:
    return str(frees_words(cap, now))


def zeroclaw_refusal(cap: Cap) -> str:
    """The runtime profile's own words when its cost budget is spent (``enforce_tool_loop_budget``)."""
    return (
        f"Budget exceeded: ${cap.used:.4f} of ${cap.limit:.2f} Day limit. "
        "Cannot make further API calls until the budget resets."
    )


def refusal(cap: Cap, now: float) -> Words | str:
    """Why a spawn or message is refused: the cap, its use, and when that changes."""
    if cap.zeroclaw:
        return zeroclaw_refusal(cap)
    told = {"what": cap.what, "use": use_words(cap), "key": cap.key, "frees": frees_words(cap, now)}
    return Words("refused-over-budget", told)


def exhausted(cap: Cap) -> str:
    """The reason a run that reached the cap mid-way fails with."""
    return zeroclaw_refusal(cap) if cap.zeroclaw else f"budget exhausted ({cap.key})"


def warning_words(cap: Cap, user_id: int, now: float) -> Words:
    """The day's warning to a member near a daily cap: how much is used, and when it resets."""
    share = str(int(cap.used * 100 / cap.limit))
    told = {"what": cap.what, "use": use_words(cap), "key": cap.key, "frees": frees_words(cap, now)}
    return Words("budget-warning", {"member": f"<@{user_id}>", "share": share, **told})


def warning(cap: Cap, user_id: int, now: float) -> str:
    return str(warning_words(cap, user_id, now))


def first_reached(caps: list[Cap]) -> Cap | None:
    return next((cap for cap in caps if cap.reached), None)
