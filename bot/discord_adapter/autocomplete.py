"""Autocomplete for every ``target`` option: the conversation's runs by number, label, status and age."""

from __future__ import annotations

import asyncio
import time

from discord import app_commands

from bot.core.people.control import RunControl
from bot.core.stats import format_runtime
from bot.discord_adapter.run_views import row_status
from bot.i18n import localized

AUTOCOMPLETE_BUDGET_SECONDS = 1.5


async def target_choices(
    control: RunControl, conversation: str, current: str, locale: object = None
) -> list[app_commands.Choice[str]]:
    """Target choices in the member's language, matching what was typed.

    Bounded in time so Discord always gets an answer: no choices is better than a failed interaction."""
    try:
        async with asyncio.timeout(AUTOCOMPLETE_BUDGET_SECONDS):  # not wait_for: see bot.waiting
            rows = await control.target_choices(conversation)
    except TimeoutError:
        return []
    now = time.time()
    typed = current.strip().lower()
    choices = []
    for index, row in rows:
        assert row.run is not None
        age = localized("when-ago", locale, span=format_runtime(now - row.run.created_at))
        name = f"#{index} {row.label[:60]} — {row_status(row, locale)}, {age}"
        if not typed or typed in name.lower() or row.run.id.startswith(typed):
            choices.append(app_commands.Choice(name=name[:100], value=str(index)))
    return choices[:25]
