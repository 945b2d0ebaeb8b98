"""Mentions and DMs: the conversation's main agent answers (through the outbox, as a reply)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import discord
from discord.ext import commands

from bot.core.errors import AttachmentRefused, UserError
from bot.core.runs.requests import ChatRequest
from bot.discord_adapter.attachments import prepared
from bot.discord_adapter.conversations import conversation_for
from bot.discord_adapter.splitting import DISCORD_MESSAGE_LIMIT
from bot.discord_adapter.thread_notices import tell_privately
from bot.i18n import localized
from bot.records import Origin
from bot.text import has_visible_text, shortened

if TYPE_CHECKING:
    from bot.app import ThreadboundBot

_CHAT_TYPES = (discord.MessageType.default, discord.MessageType.reply)
ATTACHED_ONLY = "(see the attached files)"  # the text of a message that is only attachments


def _locale(message: discord.Message) -> discord.Locale | None:
    """A message comes with no locale of its sender: the server's preferred one (English in a DM)."""
    return message.guild.preferred_locale if message.guild else None


class ChatCog(commands.Cog):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot

    @property
    def _me(self) -> discord.ClientUser:
        """The bot's own user: set at log-in, before any message arrives (``on_message`` checks it first)."""
        assert self.bot.user is not None, "messages are handled only after log-in"
        return self.bot.user

    def _addressed_to_me(self, message: discord.Message) -> bool:
        if message.type not in _CHAT_TYPES:
            return False
        return message.guild is None or any(user.id == self._me.id for user in message.mentions)

    async def _route_to_bound_session(self, message: discord.Message) -> bool:
        """Route a bound thread's messages to its session, no mention needed.

        Only from those who may talk to it there; anyone else is told privately, once per thread, that it is someone
        else's."""
        author = await self.bot.author(message)
        text, limits = self._without_my_mention(message.content), self.bot.config.discord
        try:
            heard = await self.bot.orchestrator.thread_message(
                message.channel.id,
                text or (ATTACHED_ONLY if message.attachments else ""),
                self._origin(message),
                mod=author.is_moderator,
                files=(lambda: prepared(message.attachments, limits)) if message.attachments else None,
            )
        except AttachmentRefused as error:  # over the limits, unreadable, or not now: to them alone
            await tell_privately(message, localized("refusal", _locale(message), reason=error.render(_locale(message))))
            return True
        except UserError as error:
            await self._refuse(message, error)
            return True
        if heard is not None and heard.notice is not None:
            await tell_privately(message, heard.notice.render(_locale(message)))
        return heard is not None

    @staticmethod
    async def _refuse(message: discord.Message, error: UserError) -> None:
        locale = _locale(message)
        refusal = localized("refusal", locale, reason=error.render(locale))
        await message.reply(shortened(refusal, DISCORD_MESSAGE_LIMIT), mention_author=False)

    def _origin(self, message: discord.Message) -> Origin:
        guild_id = message.guild.id if message.guild else None
        return Origin(
            user_id=message.author.id,
            channel_id=message.channel.id,
            guild_id=guild_id,
            message_id=message.id,
            conversation=conversation_for(channel_id=message.channel.id, guild_id=guild_id, user_id=message.author.id),
        )

    def _without_my_mention(self, content: str) -> str:
        return re.sub(rf"<@!?{self._me.id}>", "", content).strip()

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if self.bot.user is None or message.author.id == self.bot.user.id or message.webhook_id is not None:
            return  # our own posts and webhook echoes never loop back
        if message.author.bot:
            if self.bot.config.discord.route_bot_messages and message.type in _CHAT_TYPES:
                await self._route_to_bound_session(message)
            return
        if message.type in _CHAT_TYPES and await self._route_to_bound_session(message):
            return
        if not self._addressed_to_me(message):
            return
        text = self._without_my_mention(message.content)
        if not has_visible_text(text) and not message.attachments:
            await message.reply(localized("mention-needs-text", _locale(message)), mention_author=False)
            return
        try:
            files = await prepared(message.attachments, self.bot.config.discord)
            request = ChatRequest(text=text or ATTACHED_ONLY, origin=self._origin(message), attachments=files)
            await self.bot.orchestrator.chat(request)
        except AttachmentRefused as error:  # over the limits or unreadable: said to them alone, nothing started
            await tell_privately(message, localized("refusal", _locale(message), reason=error.render(_locale(message))))
        except UserError as error:
            await self._refuse(message, error)


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(ChatCog(bot))
