"""Approve and Deny buttons on an approval request. Their state lives in the ``custom_id``
(``approval:<approve|deny>:<approval id>``), so they keep working after a restart (discord.py's ``DynamicItem``);
who may decide is the core's business (from the request's own channel: the run's owner, or a moderator of the
run's server, audited)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import discord

from bot.discord_adapter.conversations import channels_of
from bot.discord_adapter.run_buttons import answer_privately

if TYPE_CHECKING:
    from bot.app import ThreadboundBot

_LOOKS = {
    "approve": ("Approve", "✅", discord.ButtonStyle.success),
    "deny": ("Deny", "🚫", discord.ButtonStyle.danger),
}


class ApprovalButton(
    discord.ui.DynamicItem[discord.ui.Button],
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

    # [override]: as on run_buttons.SteerModal.on_submit.
    async def callback(self, interaction: discord.Interaction[ThreadboundBot]) -> None:  # type: ignore[override]
        bot = interaction.client
        actor = await bot.actor(interaction)
        approve = self.action == "approve"
        decision = bot.orchestrator.decide_approval(actor, self.approval_id, approve, where=channels_of(interaction))
        await answer_privately(interaction, decision)


def approval_controls(approval_id: str) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(ApprovalButton("approve", approval_id))
    view.add_item(ApprovalButton("deny", approval_id))
    return view
