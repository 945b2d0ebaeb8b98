"""Kill and Steer buttons on a run's status message. Their state lives in the ``custom_id``
(``run:kill:<run id>``), so they keep working after a restart (discord.py's ``DynamicItem``); they go through
the same permission checks as the slash commands."""

from __future__ import annotations

import re
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import discord

from bot.core.errors import UserError
from bot.discord_adapter.conversations import conversation_of
from bot.discord_adapter.interaction_errors import send_ephemeral
from bot.discord_adapter.replies import send_text
from bot.discord_adapter.thinking import defer_privately

if TYPE_CHECKING:
    from bot.app import ThreadboundBot

STEER_INPUT_ID = "steer-text"


async def answer_privately(interaction: discord.Interaction, work: Awaitable[str]) -> None:
    """Defer, do the work, reply privately; a refusal becomes its message instead of a failed interaction."""
    await defer_privately(interaction)
    try:
        reply = await work
    except UserError as refused:
        await send_ephemeral(interaction, f"⚠️ {refused}")
        return
    await send_text(interaction, reply)


class SteerModal(discord.ui.Modal):
    def __init__(self, run_id: str) -> None:
        super().__init__(title="Steer this sub-agent", custom_id=f"run:steer-modal:{run_id}", timeout=600)
        self.run_id = run_id
        self.direction: discord.ui.TextInput[SteerModal] = discord.ui.TextInput(
            label="New direction", style=discord.TextStyle.paragraph, max_length=4000, custom_id=STEER_INPUT_ID
        )
        self.add_item(self.direction)

    # discord.py's stubs give ClientT to the method, not the class, so no override may name its client; this
    # modal and RunButton are only ever built for ThreadboundBot (its setup_hook registers RunButton).
    async def on_submit(self, interaction: discord.Interaction[ThreadboundBot]) -> None:  # type: ignore[override]
        bot = interaction.client
        actor = await bot.actor(interaction)
        await answer_privately(
            interaction, bot.control.steer(actor, conversation_of(interaction), self.run_id, self.direction.value)
        )


_LOOKS = {
    "kill": ("Kill", "🛑", discord.ButtonStyle.danger),
    "steer": ("Steer", "🧭", discord.ButtonStyle.primary),
}


class RunButton(
    discord.ui.DynamicItem[discord.ui.Button], template=r"run:(?P<action>kill|steer):(?P<run_id>[0-9a-f]{32})"
):
    """Kill or Steer for one run: ``run:<action>:<run id>``."""

    def __init__(self, action: str, run_id: str) -> None:
        label, emoji, style = _LOOKS[action]
        super().__init__(discord.ui.Button(label=label, emoji=emoji, style=style, custom_id=f"run:{action}:{run_id}"))
        self.action = action
        self.run_id = run_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> RunButton:
        return cls(match["action"], match["run_id"])

    # [override]: as on SteerModal.on_submit.
    async def callback(self, interaction: discord.Interaction[ThreadboundBot]) -> None:  # type: ignore[override]
        if self.action == "steer":
            await interaction.response.send_modal(SteerModal(self.run_id))
            return
        bot = interaction.client
        actor = await bot.actor(interaction)
        await answer_privately(interaction, bot.control.kill(actor, conversation_of(interaction), self.run_id))


def run_controls(run_id: str) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(RunButton("kill", run_id))
    view.add_item(RunButton("steer", run_id))
    return view
