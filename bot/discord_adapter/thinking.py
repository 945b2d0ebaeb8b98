"""Deferring an interaction privately: the one habit of every slash command and button.

Discord drops an interaction not answered within 3 seconds, and the core may take longer, so each command first
says "thinking…" where only its user sees it; its reply and any error then follow up privately too."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

import discord

P = ParamSpec("P")
CogT = TypeVar("CogT")


async def defer_privately(interaction: discord.Interaction) -> None:
    """Acknowledge with a private "thinking…"; the answer follows up."""
    await interaction.response.defer(ephemeral=True, thinking=True)


def thinks_privately(
    callback: Callable[Concatenate[CogT, discord.Interaction, P], Coroutine[Any, Any, None]],
) -> Callable[Concatenate[CogT, discord.Interaction, P], Coroutine[Any, Any, None]]:
    """A command's callback that defers privately before its body runs.

    Put it right above ``async def``.

    discord.py reads a command's options from its callback's signature, resolving string annotations in the
    callback's module: the wrapper carries the callback's signature with its annotations already resolved
    there, since the wrapper's own module knows none of the cog's names."""

    @functools.wraps(callback)
    async def deferring(cog: CogT, interaction: discord.Interaction, /, *args: P.args, **kwargs: P.kwargs) -> None:
        await defer_privately(interaction)
        await callback(cog, interaction, *args, **kwargs)

    deferring.__signature__ = inspect.signature(callback, eval_str=True)  # type: ignore[attr-defined]
    return deferring
