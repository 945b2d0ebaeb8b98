"""Approve and Deny buttons on an approval request. Their state lives in the ``custom_id``
(``approval:<approve|deny>:<approval id>``), so they keep working after a restart (discord.py's ``DynamicItem``);
who may decide is the core's business (from the request's own channel: the run's owner, or a moderator of the
run's server, audited).

The buttons are bound when the bot registers them to what decides and to the resolver of who clicked, so a click
reaches nothing else of the bot."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Collection
from typing import Any, Protocol

import discord

from bot.discord_adapter.conversations import channels_of
from bot.discord_adapter.run_buttons import ActorOf, answer_privately
from bot.i18n import Words
from bot.records import Actor

_LOOKS = {
    "approve": ("Approve", "✅", discord.ButtonStyle.success),
    "deny": ("Deny", "🚫", discord.ButtonStyle.danger),
}


class Decide(Protocol):
    """Where a person's Approve or Deny goes; its checks say whether it counts."""

    def __call__(
        self, actor: Actor, approval_id: str, approve: bool, *, where: Collection[int]
    ) -> Awaitable[Words]: ...


class ApprovalButtons:
    """The Approve and Deny buttons of one bot: ``item`` is the ``DynamicItem`` class it registers, ``controls``
    the view a request carries (built from that same class, as :class:`~bot.discord_adapter.run_buttons.RunButtons`
    explains)."""

    def __init__(self, decide: Decide, actor_of: ActorOf) -> None:
        self._decide = decide
        self._actor_of = actor_of
        buttons = self

        class ApprovalButton(
            discord.ui.DynamicItem[discord.ui.Button[Any]],
            template=r"approval:(?P<action>approve|deny):(?P<approval_id>[0-9a-f]{32})",
        ):
            def __init__(self, action: str, approval_id: str) -> None:
                label, emoji, style = _LOOKS[action]
                button: discord.ui.Button[Any] = discord.ui.Button(
                    label=label, emoji=emoji, style=style, custom_id=f"approval:{action}:{approval_id}"
                )
                super().__init__(button)
                self.action = action
                self.approval_id = approval_id

            @classmethod
            async def from_custom_id(
                cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
            ) -> ApprovalButton:
                return cls(match["action"], match["approval_id"])

            async def callback(self, interaction: discord.Interaction) -> None:
                await buttons.clicked(interaction, self.action, self.approval_id)

        self.item = ApprovalButton

    def controls(self, approval_id: str) -> discord.ui.View:
        view = discord.ui.View(timeout=None)
        view.add_item(self.item("approve", approval_id))
        view.add_item(self.item("deny", approval_id))
        return view

    async def clicked(self, interaction: discord.Interaction, action: str, approval_id: str) -> None:
        actor = await self._actor_of(interaction)
        decision = self._decide(actor, approval_id, action == "approve", where=channels_of(interaction))
        await answer_privately(interaction, decision)
