"""Answers shown while they are written: one message posted early, then edited as the text grows.

Each run's draft has a task of its own that edits at most once per ``[discord] stream_edit_seconds`` per message,
always with the newest text (what arrived in between is never sent: the edits coalesce). A rate limit Discord
answers drops the edit it refused and pauses the draft until the limit lifts. The draft is cut into messages by the
same rules as the final text, with a marker on its last message while the model is still writing. Its message ids
are stored with the run, so the final text is posted over the draft by whichever process delivers it, also after a
restart (``edit_over``); closing a draft cancels whatever edit is in flight, so the final text is never overwritten.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import discord
import structlog

from bot.core.runs.announcements import Announcement
from bot.discord_adapter.failures import NETWORK_ERRORS, describe_error
from bot.discord_adapter.persona import PersonaTarget, PersonaTransientError, PersonaUnavailable, WebhookPersona
from bot.discord_adapter.read_back import CLOCK_SKEW_SECONDS, find_posted, nonce_for
from bot.discord_adapter.render import OutgoingMessage, render
from bot.discord_adapter.server_locale import server_locale
from bot.discord_adapter.splitting import DISCORD_MESSAGE_LIMIT
from bot.i18n import localized
from bot.records import RunStatus
from storage.run_drafts import RunDraft, RunDraftRepository

log = structlog.get_logger(__name__)

COOL_OFF_INTERVALS = 2  # after an edit held up by a rate limit, the draft waits this many intervals
DRAFT_ERRORS = (discord.HTTPException, PersonaTransientError, PersonaUnavailable, *NETWORK_ERRORS)


def marker(locale: object) -> str:
    """The line under a draft while its model is still writing."""
    return f"-# ✍️ {localized('draft-writing', locale)}"


def draft_parts(draft: Announcement, text: str, locale: object) -> list[str]:
    """The messages' texts of ``text`` shown as ``draft``: the final text's cut, marked as still being written."""
    shown = draft.model_copy(update={"body": text, "status_line": localized("draft-writing", locale)})
    parts = [message.content for message in render(shown, locale=locale)]
    mark = marker(locale)
    if len(parts[-1]) + 1 + len(mark) <= DISCORD_MESSAGE_LIMIT:
        parts[-1] = f"{parts[-1]}\n{mark}"
    else:
        parts.append(mark)
    return parts


def _stopped(shown: str, locale: object, *, first: bool, last: bool) -> str:
    """A draft message's text once its run was stopped: a header that said writing says stopped, and the last
    message's marker becomes the stopped line."""
    writing, stopped = localized("draft-writing", locale), localized("draft-stopped", locale)
    head, newline, rest = shown.partition("\n")
    if first and head.endswith(f": {writing}"):
        head = head.removesuffix(writing).replace(RunStatus.RUNNING.icon, RunStatus.KILLED.icon, 1) + stopped
    text = head + newline + rest
    if last:
        text = f"{text.removesuffix(marker(locale)).rstrip()}\n-# ⏹️ {stopped}".strip()
    return text


def _mentions(draft: Announcement) -> discord.AllowedMentions:
    """The same pings as the final text's: the member it answers or tells, never anyone the model names."""
    users = [discord.Object(draft.mention_user_id)] if draft.mention_user_id else False
    return discord.AllowedMentions(everyone=False, roles=False, users=users, replied_user=True)


@dataclass(eq=False)
class _Draft:
    channel_id: int  # the run's channel, where its announcement goes
    announcement: Announcement
    latest: Callable[[], str] = str  # the text to show now ("" for nothing yet)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    message_ids: list[int] = field(default_factory=list)
    shown: list[str | None] = field(default_factory=list)
    webhook: PersonaTarget | None = None
    posting: asyncio.Future[int] | None = None  # a post in flight: closing waits for it, so it is recorded
    last_edit: float = float("-inf")


class DiscordDrafts:
    """The core's draft port on Discord: a task a draft, pacing its edits."""

    def __init__(
        self,
        client: discord.Client,
        drafts: RunDraftRepository,
        persona: WebhookPersona | None,
        *,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._drafts = drafts
        self._persona = persona
        self._interval = interval
        self._clock = clock
        self._open: dict[str, _Draft] = {}

    def write(self, channel_id: int, draft: Announcement, text: Callable[[], str]) -> None:
        """Show ``text()`` in ``channel_id`` as ``draft``'s run's answer so far, soon; never blocks."""
        state = self._open.get(draft.run_id)
        if state is None:
            state = self._open[draft.run_id] = _Draft(channel_id, draft)
            state.task = asyncio.create_task(self._keep_shown(state), name=f"draft-{draft.run_id}")
        state.latest = text
        state.changed.set()

    async def close(self, run_id: str) -> None:
        """Stop showing the run's draft: the edit in flight is dropped, a post in flight is recorded first."""
        state = self._open.pop(run_id, None)
        if state is None or state.task is None:
            return
        state.task.cancel()
        try:
            await state.task
        except asyncio.CancelledError:
            pass
        except Exception:  # a draft that failed is only a draft: the final text is posted all the same
            log.exception("draft_failed", run_id=run_id)
        if state.posting is not None:
            try:
                await state.posting
            except (Exception, asyncio.CancelledError) as error:  # it is posted, or it is not: either is recorded
                log.info("draft_post_unfinished", run_id=run_id, error=describe_error(error))

    async def abandon(self, run_id: str, *, stopped: bool) -> None:
        """No final text comes for this draft: a stopped run's stays, marked stopped; any other is removed."""
        stored = await self._drafts.get(run_id)
        if stored is None:
            return
        locale = server_locale(self._client, stored.channel_id)
        channel = self._client.get_partial_messageable(stored.channel_id)
        try:
            if stopped and stored.message_ids:
                for index, message_id in enumerate(stored.message_ids):
                    shown = (await channel.fetch_message(message_id)).content  # the bot reads its persona's too
                    kept = _stopped(shown, locale, first=index == 0, last=index == len(stored.message_ids) - 1)
                    if kept != shown:
                        await self._edit(stored, message_id, kept, None)
            elif not stopped:
                for message_id in stored.message_ids:
                    await self._delete(stored, message_id)
        except DRAFT_ERRORS as error:
            log.warning("draft_not_let_go", run_id=run_id, error=describe_error(error))
        await self._drafts.forget(run_id)

    async def edit_over(self, draft: RunDraft, index: int, message: OutgoingMessage, mention: int | None) -> int | None:
        """Put a part of the final text in the draft's ``index``-th message; ``None`` if it cannot be (deleted,
        its webhook gone, or files the persona cannot carry there), and the part is posted anew instead."""
        message_id = draft.message_ids[index]
        try:
            if message.attachments and draft.webhook_id is not None:
                await self._delete(draft, message_id)
                return None
            if message.attachments:
                files = [discord.File(io.BytesIO(blob), name) for name, blob in message.attachments]
                users = [discord.Object(mention)] if mention else False
                partial = self._client.get_partial_messageable(draft.channel_id).get_partial_message(message_id)
                await partial.edit(
                    content=message.content,
                    attachments=files,
                    allowed_mentions=discord.AllowedMentions(users=users, everyone=False),
                )
            else:
                await self._edit(draft, message_id, message.content, mention)
        except (discord.NotFound, PersonaUnavailable) as gone:
            log.info("draft_gone", run_id=draft.run_id, message_id=message_id, reason=describe_error(gone))
            return None
        return message_id

    async def trim(self, draft: RunDraft, keep: int) -> None:
        """Delete the draft's messages past the final text's ``keep`` (it came out shorter)."""
        for message_id in draft.message_ids[keep:]:
            try:
                await self._delete(draft, message_id)
            except DRAFT_ERRORS as error:
                log.warning("draft_not_trimmed", run_id=draft.run_id, error=describe_error(error))

    async def _keep_shown(self, state: _Draft) -> None:
        """Edit the draft with the newest text, at most once an interval, until closed."""
        run_id = state.announcement.run_id
        stored = await self._drafts.get(run_id)  # an earlier turn's draft, or an earlier life's: written on
        if stored is not None:
            state.message_ids = list(stored.message_ids)
            state.shown = [None] * len(state.message_ids)
            if stored.webhook_id is not None and self._persona is not None:
                target = await self._persona.target(stored.channel_id)
                state.webhook = target if target is not None and target.webhook_id == stored.webhook_id else None
        while True:
            await state.changed.wait()
            # Discord's edit bucket is the channel's: drafts written side by side in one channel share it
            sharing = sum(1 for other in self._open.values() if other.channel_id == state.channel_id)
            wait = state.last_edit + self._interval * max(1, sharing) - self._clock()
            if wait > 0:
                await asyncio.sleep(wait)
            state.changed.clear()
            text = state.latest()
            if not text.strip():
                continue
            try:
                await self._show(state, text)
            except discord.RateLimited as limited:  # the refused edit is dropped; newer text goes once it lifts
                log.info("draft_rate_limited", run_id=run_id, retry_after=limited.retry_after)
                await asyncio.sleep(limited.retry_after)
            except TimeoutError:  # held up by a rate limit: dropped; the newest text goes after a pause
                log.info("draft_edit_dropped", run_id=run_id)
                await asyncio.sleep(COOL_OFF_INTERVALS * self._interval)
            except DRAFT_ERRORS as error:
                log.warning("draft_not_shown", run_id=run_id, error=describe_error(error))
            state.last_edit = self._clock()

    async def _show(self, state: _Draft, text: str) -> None:
        draft, channel_id = state.announcement, state.channel_id
        parts = draft_parts(draft, text, server_locale(self._client, channel_id, draft.guild_id))
        for index, part in enumerate(parts):
            if index < len(state.message_ids):
                if state.shown[index] != part:
                    stored = RunDraft(draft.run_id, channel_id, tuple(state.message_ids), _webhook_id(state))
                    edit = self._edit(stored, state.message_ids[index], part, draft.mention_user_id, state.webhook)
                    # an edit Discord holds up (a rate limit waited out inside the client) is dropped, not sent late;
                    # not wait_for, which can swallow a close's cancel as the edit completes (see bot.waiting)
                    async with asyncio.timeout(self._interval):
                        await edit
                    state.shown[index] = part
                continue
            state.posting = asyncio.ensure_future(self._post_and_record(state, channel_id, index, part))
            state.posting.add_done_callback(_retrieved)  # its failure is the draft's, seen once (close, or here)
            await asyncio.shield(state.posting)
            state.posting = None

    async def _post_and_record(self, state: _Draft, channel_id: int, index: int, part: str) -> int:
        """Post one more message of the draft and store it with the run.

        Closing waits for both, as one step."""
        draft = state.announcement
        if not state.message_ids and self._persona is not None:  # the first message picks who speaks: as in the end
            state.webhook = await self._persona.target(channel_id)
        if state.webhook is not None:
            label = f"🤖 {draft.agent_label}"
            try:
                message_id = await self._persona.post(state.webhook, part, label, draft.mention_user_id)  # type: ignore[union-attr]
            except PersonaTransientError:  # webhooks take no nonce: maybe it was posted, so look first
                since = time.time() - CLOCK_SKEW_SECONDS
                found = await find_posted(self._client, channel_id, part, since=since, taken=set(state.message_ids))
                if found is None:
                    raise
                message_id = found
            shown = part
        else:
            reference = None
            if index == 0 and draft.reply_to_message_id:
                reference = discord.MessageReference(
                    message_id=draft.reply_to_message_id, channel_id=channel_id, fail_if_not_exists=False
                )
            channel = self._client.get_partial_messageable(channel_id)
            # the same nonce on a retry: a post whose answer was lost returns the message it made, not a second one
            nonce = nonce_for(f"draft:{draft.run_id}", index)
            sent = await channel.send(part, nonce=nonce, reference=reference, allowed_mentions=_mentions(draft))  # type: ignore[arg-type]
            message_id, shown = sent.id, sent.content  # a retried post's first message, as it stands
        state.message_ids.append(message_id)
        state.shown.append(shown)
        stored = RunDraft(draft.run_id, channel_id, tuple(state.message_ids), _webhook_id(state))
        await self._drafts.put(stored, time.time())
        return message_id

    async def _edit(
        self,
        draft: RunDraft,
        message_id: int,
        content: str,
        mention_user_id: int | None,
        webhook: PersonaTarget | None = None,
    ) -> None:
        if draft.webhook_id is not None:
            target = webhook or (await self._persona.target(draft.channel_id) if self._persona else None)
            if target is None or target.webhook_id != draft.webhook_id:
                raise PersonaUnavailable("the draft's webhook is gone")
            await self._persona.edit(target, message_id, content, mention_user_id)  # type: ignore[union-attr]
            return
        users = [discord.Object(mention_user_id)] if mention_user_id else False
        message = self._client.get_partial_messageable(draft.channel_id).get_partial_message(message_id)
        await message.edit(content=content, allowed_mentions=discord.AllowedMentions(users=users, everyone=False))

    async def _delete(self, draft: RunDraft, message_id: int) -> None:
        if draft.webhook_id is None:
            with contextlib.suppress(discord.NotFound):
                await self._client.get_partial_messageable(draft.channel_id).get_partial_message(message_id).delete()
            return
        target = await self._persona.target(draft.channel_id) if self._persona else None
        if target is not None and target.webhook_id == draft.webhook_id:
            await self._persona.delete(target, message_id)  # type: ignore[union-attr]


def _retrieved(posting: asyncio.Future[int]) -> None:
    if not posting.cancelled():
        posting.exception()


def _webhook_id(state: _Draft) -> int | None:
    return state.webhook.webhook_id if state.webhook is not None else None
