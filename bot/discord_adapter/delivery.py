"""The delivery worker: posts outbox rows to Discord exactly once.

Each part of a row is sent with a nonce derived from the row's idempotency key (discord.py adds
``enforce_nonce``), so a retry after a lost answer returns the message Discord already created instead of
posting a duplicate. Parts already sent are recorded, so a restart resumes where delivery stopped.
Transient failures (5xx, 429, network) are retried with exponential backoff; permanent ones (unknown
channel, missing access, bad request) end the row as failed and are logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import time
from collections.abc import Awaitable, Callable

import discord
import structlog

from bot.core.announcements import Announcement
from bot.discord_adapter.failures import backoff_delay, is_transient
from bot.discord_adapter.persona import (
    PersonaTransientError,
    PersonaUnavailable,
    WebhookPersona,
)
from bot.discord_adapter.render import OutgoingMessage, render
from storage.outbox import OutboxRepository, OutboxRow

log = structlog.get_logger(__name__)

NONCE_LENGTH = 25


def nonce_for(idempotency_key: str, part: int) -> str:
    """Discord nonces are at most 25 characters: a digest of the key and the part index."""
    return hashlib.sha256(f"{idempotency_key}#{part}".encode()).hexdigest()[:NONCE_LENGTH]


def _is_transient(error: BaseException) -> bool:
    return isinstance(error, PersonaTransientError) or is_transient(error)


class DeliveryWorker:
    def __init__(
        self,
        client: discord.Client,
        outbox: OutboxRepository,
        *,
        on_delivered: Callable[[str], Awaitable[None]],
        persona: WebhookPersona | None = None,
        clock: Callable[[], float] = time.time,
        base_delay: float = 2.0,
        max_delay: float = 300.0,
    ) -> None:
        self._client = client
        self._outbox = outbox
        self._on_delivered = on_delivered
        self._persona = persona
        self._started_at = clock()
        self._clock = clock
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        self._wake.set()

    async def start(self) -> None:
        """Retry what a previous process left undelivered right away, then keep delivering."""
        await self._outbox.retry_pending_now(self._clock())
        self._task = asyncio.create_task(self._loop(), name="outbox-delivery")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                for row in await self._outbox.due(self._clock()):
                    await self._deliver(row)
                next_at = await self._outbox.next_attempt_at()
            except Exception:
                log.exception("outbox_loop_failed")
                next_at = self._clock() + self._base_delay
            if next_at is not None and next_at <= self._clock():
                continue
            timeout = None if next_at is None else next_at - self._clock()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _deliver(self, row: OutboxRow) -> None:
        bound = log.bind(outbox_id=row.id, run_id=row.run_id, channel_id=row.channel_id)
        announcement = Announcement.model_validate_json(row.payload_json)
        messages = render(announcement)
        message_ids = list(row.message_ids)
        try:
            for index in range(row.parts_sent, len(messages)):
                message_ids.append(await self._post(row, announcement, messages[index], index))
                await self._outbox.record_part(row.id, index + 1, message_ids)
        except Exception as error:
            attempts = row.attempts + 1
            if _is_transient(error):
                delay = backoff_delay(self._base_delay, attempts, self._max_delay)
                await self._outbox.schedule_retry(row.id, attempts, self._clock() + delay, repr(error))
                bound.warning("delivery_retry_scheduled", attempts=attempts, delay=delay, error=repr(error))
            else:
                await self._outbox.mark_failed(row.id, attempts, repr(error))
                bound.error("delivery_failed", attempts=attempts, error=repr(error))
            return
        await self._outbox.mark_delivered(row.id, self._clock())
        bound.info("delivered", message_ids=message_ids)
        if row.run_id is not None:
            await self._on_delivered(row.run_id)

    async def _post(self, row: OutboxRow, announcement: Announcement, message: OutgoingMessage, index: int) -> int:
        """Post one part: as the sub-agent's persona in a bound thread when possible, else as the bot."""
        target = await self._persona.target(row.channel_id) if self._persona and not message.attachment else None
        if target is not None:
            may_exist = row.attempts > 0 or row.created_at < self._started_at
            if may_exist and (posted := await self._persona.find_posted(target, message.content)):
                return posted
            try:
                return await self._persona.post(
                    target, message.content, f"🤖 {announcement.agent_label}", announcement.mention_user_id
                )
            except PersonaUnavailable as unavailable:
                log.info("persona_fallback", channel_id=row.channel_id, reason=str(unavailable))
        return (await self._send(row, announcement, message, index)).id

    async def _send(
        self, row: OutboxRow, announcement: Announcement, message: OutgoingMessage, index: int
    ) -> discord.Message:
        channel = self._client.get_partial_messageable(row.channel_id)
        mentioned = [discord.Object(announcement.mention_user_id)] if announcement.mention_user_id else False
        reference = None
        if index == 0 and announcement.reply_to_message_id:
            reference = discord.MessageReference(
                message_id=announcement.reply_to_message_id, channel_id=row.channel_id, fail_if_not_exists=False
            )
        file = discord.File(io.BytesIO(message.attachment[1]), message.attachment[0]) if message.attachment else None
        return await channel.send(
            message.content,
            file=file,
            nonce=nonce_for(row.idempotency_key, index),
            reference=reference,
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=mentioned, replied_user=True),
        )
