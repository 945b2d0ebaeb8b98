"""Compact human formats for run statistics: ``runtime 5m12s • tokens 1.2k (in 1.0k / out 200)``."""

from __future__ import annotations

from decimal import Decimal

from bot.records import Usage


def format_runtime(seconds: float) -> str:
    total = max(0, int(seconds))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m"


def format_tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}m"


def format_cost(cost: Decimal) -> str:
    if cost == 0:
        return "$0"
    if cost >= Decimal("0.01"):
        return f"${cost:.2f}"
    return f"${cost:.4f}" if cost >= Decimal("0.0001") else "<$0.0001"


def tokens_phrase(usage: Usage) -> str:
    """Tokens as every view writes them: ``tokens 1.5k (in 1.2k / out 300)``."""
    total = usage.input_tokens + usage.output_tokens
    return (
        f"tokens {format_tokens(total)} "
        f"(in {format_tokens(usage.input_tokens)} / out {format_tokens(usage.output_tokens)})"
    )


def stats_line(runtime_seconds: float, usage: Usage, *, fallback_model: str | None = None) -> str:
    """Runtime and tokens always; estimated cost only when the price is known (unknown is not $0); the model that
    served the run when a fallback candidate did."""
    line = f"runtime {format_runtime(runtime_seconds)} • {tokens_phrase(usage)}"
    if usage.cost is not None:
        line += f" • est. cost {format_cost(usage.cost)}"
    if fallback_model is not None:
        line += f" • served by {fallback_model}"
    return line
