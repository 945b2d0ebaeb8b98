"""Autocomplete for every ``target`` option: the conversation's runs by number, label, status and age."""

from __future__ import annotations

import asyncio

from discord import app_commands

from bot.core.people.control import RunControl

AUTOCOMPLETE_BUDGET_SECONDS = 1.5


async def target_choices(control: RunControl, conversation: str, current: str) -> list[app_commands.Choice[str]]:
    """Target choices, bounded in time so Discord always gets an answer.

    No choices is better than a failed interaction."""
    try:
        pairs = await asyncio.wait_for(control.target_choices(conversation, current), AUTOCOMPLETE_BUDGET_SECONDS)
    except TimeoutError:
        return []
    return [app_commands.Choice(name=name, value=value) for name, value in pairs]
