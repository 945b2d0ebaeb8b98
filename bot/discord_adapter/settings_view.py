"""``/settings``' replies: each setting's effective value and where it comes from (this server, the config, or the
default), in the admin's language. Keys and config paths stay as the config spells them."""

from __future__ import annotations

from bot.core.budgets.caps import amount_words, unit_of
from bot.core.budgets.limits import BUDGET_KEYS, Limits
from bot.core.guild_settings import EffectiveSettings
from bot.discord_adapter.spoken import spoken
from bot.i18n import localized


def _source(source: str, locale: object) -> str:
    """Where a value comes from: a config path as it is, the rest in words."""
    if source in ("this server", "default", "not set"):
        return localized("setting-source", locale, source=source.replace(" ", "-"))
    return source


def render_thread_bindings(effective: EffectiveSettings, *, changed: bool, locale: object = None) -> str:
    """The thread-binding settings here; the moderator role as a mention (it never pings: replies allow none)."""
    values = effective.thread_bindings.model_dump()
    lines = [localized("settings-updated", locale) if changed else localized("settings-thread-bindings", locale)]
    lines += [
        f"{key}: {values[key]} ({_source(source, locale)})"
        for key, source in effective.sources.items()
        if key in values
    ]
    role = f"<@&{effective.moderator_role_id}>" if effective.moderator_role_id else localized("setting-none", locale)
    lines.append(f"moderator_role: {role} ({_source(effective.sources['moderator_role'], locale)})")
    return "\n".join(lines)


def render_budgets(effective: Limits, *, changed: bool, locale: object = None) -> str:
    """Every budget cap here in its unit, 0 shown as no cap."""
    lines = [localized("settings-updated", locale) if changed else localized("settings-budgets", locale)]
    for key in BUDGET_KEYS:
        value = effective.values[key]
        shown = spoken(amount_words(unit_of(key), value), locale) if value else localized("setting-no-cap", locale)
        lines.append(f"{key}: {shown} ({_source(effective.sources[key], locale)})")
    return "\n".join(lines)
