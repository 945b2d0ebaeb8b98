"""Kill and Steer buttons on a run's status message. Their state lives in the ``custom_id``
(``run:kill:<run id>``), so they keep working after a restart (discord.py's ``DynamicItem``); they go through
the same permission checks as the slash commands.

The buttons are bound when the bot registers them to the run control they act through and to the resolver of who
clicked, so a click reaches nothing else of the bot."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import discord

from bot.core.errors import UserError
from bot.discord_adapter.conversations import conversation_of
from bot.discord_adapter.interaction_errors import send_ephemeral
from bot.discord_adapter.replies import send_text
from bot.discord_adapter.thinking import defer_privately
from bot.i18n import Words, localized
from bot.records import Actor

STEER_INPUT_ID = "steer-text"

ActorOf = Callable[[discord.Interaction], Awaitable[Actor]]
"""Who clicked, and whether they moderate where they clicked."""


class RunCommands(Protocol):
    """What the buttons do to a run, checked as ``/subagents kill`` and ``steer`` are."""

    async def kill(self, actor: Actor, conversation: str, target: str) -> Words: ...

    async def steer(self, actor: Actor, conversation: str, target: str, message: str) -> Words: ...


async def answer_privately(interaction: discord.Interaction, work: Awaitable[Words]) -> None:
    """Defer, do the work, reply privately in the clicker's language; a refusal becomes its message instead of a
    failed interaction."""
    await defer_privately(interaction)
    locale = interaction.locale
    try:
        reply = await work
    except UserError as refused:
        await send_ephemeral(interaction, localized("refusal", locale, reason=refused.render(locale)))
        return
    await send_text(interaction, reply.render(locale))


class SteerModal(discord.ui.Modal):
    def __init__(self, run_id: str, buttons: RunButtons, locale: discord.Locale) -> None:
        title = localized("steer-modal-title", locale)
        super().__init__(title=title, custom_id=f"run:steer-modal:{run_id}", timeout=600)
        self.run_id = run_id
        self.buttons = buttons
        self.direction: discord.ui.TextInput[SteerModal] = discord.ui.TextInput(
            label=localized("steer-modal-direction", locale),
            style=discord.TextStyle.paragraph,
            max_length=4000,
            custom_id=STEER_INPUT_ID,
        )
        self.add_item(self.direction)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await self.buttons.steer(interaction, self.run_id, self.direction.value)


_LOOKS = {
    "kill": ("Kill", "🛑", discord.ButtonStyle.danger),
    "steer": ("Steer", "🧭", discord.ButtonStyle.primary),
}


class RunButtons:
    """The Kill and Steer buttons of one bot: ``item`` is the ``DynamicItem`` class it registers
    (``add_dynamic_items``), ``controls`` the view a status message carries (built from that same class: a view
    sent with another class of the same template would replace the registered one)."""

    def __init__(self, control: RunCommands, actor_of: ActorOf) -> None:
        self._control = control
        self._actor_of = actor_of
        buttons = self

        class RunButton(
            discord.ui.DynamicItem[discord.ui.Button[Any]],
            template=r"run:(?P<action>kill|steer):(?P<run_id>[0-9a-f]{32})",
        ):
            """Kill or Steer for one run: ``run:<action>:<run id>``."""

            def __init__(self, action: str, run_id: str) -> None:
                label, emoji, style = _LOOKS[action]
                button: discord.ui.Button[Any] = discord.ui.Button(
                    label=label, emoji=emoji, style=style, custom_id=f"run:{action}:{run_id}"
                )
                super().__init__(button)
                self.action = action
                self.run_id = run_id

            @classmethod
            async def from_custom_id(
                cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
            ) -> RunButton:
                return cls(match["action"], match["run_id"])

            async def callback(self, interaction: discord.Interaction) -> None:
                await buttons.clicked(interaction, self.action, self.run_id)

        self.item = RunButton

    def controls(self, run_id: str) -> discord.ui.View:
        view = discord.ui.View(timeout=None)
        view.add_item(self.item("kill", run_id))
        view.add_item(self.item("steer", run_id))
        return view

    async def clicked(self, interaction: discord.Interaction, action: str, run_id: str) -> None:
        """Kill at once; Steer asks for the new direction first."""
        if action == "steer":
            await interaction.response.send_modal(SteerModal(run_id, self, interaction.locale))
            return
        actor = await self._actor_of(interaction)
        await answer_privately(interaction, self._control.kill(actor, conversation_of(interaction), run_id))

    async def steer(self, interaction: discord.Interaction, run_id: str, direction: str) -> None:
        actor = await self._actor_of(interaction)
        await answer_privately(interaction, self._control.steer(actor, conversation_of(interaction), run_id, direction))
