"""Model prices the config sets (``[pricing."<provider>/<model>"]``).

They are for models pydantic-ai's catalogue does not know (local and proxied ones) or prices differently from what
is really paid."""

from __future__ import annotations

from decimal import Decimal

from pydantic_ai.usage import RequestUsage

from bot.config import ModelPrice

PER_MILLION = Decimal(1_000_000)


def cost_at(price: ModelPrice, usage: RequestUsage) -> Decimal:
    """What one response cost at ``price`` (USD per million tokens). Cached input tokens are priced as input:
    the config sets one input price."""
    return (usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok) / PER_MILLION
