"""``/settings``' replies: each setting's effective value and where it comes from (this server, the config, or the
default)."""

from __future__ import annotations

from bot.core.budgets.caps import amount, unit_of
from bot.core.budgets.limits import BUDGET_KEYS, Limits
from bot.core.guild_settings import EffectiveSettings


def render_thread_bindings(effective: EffectiveSettings, *, changed: bool) -> str:
    """The thread-binding settings here; the moderator role as a mention (it never pings: replies allow none)."""
    values = effective.thread_bindings.model_dump()
    lines = ["Updated." if changed else "Thread-binding settings here:"]
    lines += [f"{key}: {values[key]} ({source})" for key, source in effective.sources.items() if key in values]
    role = f"<@&{effective.moderator_role_id}>" if effective.moderator_role_id else "none"
    lines.append(f"moderator_role: {role} ({effective.sources['moderator_role']})")
    return "\n".join(lines)


def render_budgets(effective: Limits, *, changed: bool) -> str:
    """Every budget cap here in its unit, 0 shown as no cap."""
    lines = ["Updated." if changed else "Budget caps here (0 = no cap):"]
    for key in BUDGET_KEYS:
        value = effective.values[key]
        shown = amount(unit_of(key), value) if value else "no cap"
        lines.append(f"{key}: {shown} ({effective.sources[key]})")
    return "\n".join(lines)
