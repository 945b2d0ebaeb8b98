"""The delivery worker: posts outbox rows to Discord exactly once, each channel on its own.

Each channel's rows go out oldest first, in a task of that channel's own, so a channel that is rate-limited,
backing off or failing delays nothing posted elsewhere (at most ``MAX_CHANNELS`` channels at once). Each part is
sent with a nonce derived from the row's idempotency key (discord.py adds ``enforce_nonce``); a part that may
already exist — a retry, or a row an earlier process left — is first looked for in the channel (``read_back``),
because the nonce de-duplicates for a few minutes only. Parts sent are recorded, so a restart resumes where
delivery stopped. Transient failures (5xx, 429, network) are retried with exponential backoff until
``give_up_after`` has passed since the first one; then, or at once on a permanent failure (unknown channel,
missing access, bad request), the row ends failed and its requester is told (``notices``).

Several processes may deliver from one database: each row is delivered by the process that claimed it, under a
lease (``[discord] delivery_lease``) renewed while its parts go out. A process whose claim lapsed stops before its
next part; one that died leaves a claim that runs out, and whoever takes the row over reads the channel back first,
like any row that may have been partly posted. Rows other processes add are noticed within a lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
import time
from collections.abc import Awaitable, Callable

import discord
import structlog

from bot.core.runs.announcements import Announcement
from bot.core.stats import format_runtime
from bot.discord_adapter.drafts import DiscordDrafts
from bot.discord_adapter.failures import NETWORK_ERRORS, backoff_delay, describe_error, error_words, is_transient
from bot.discord_adapter.notices import FailureNotices
from bot.discord_adapter.persona import (
    PersonaTransientError,
    PersonaUnavailable,
    WebhookPersona,
)
from bot.discord_adapter.read_back import CLOCK_SKEW_SECONDS, find_posted, nonce_for
from bot.discord_adapter.render import OutgoingMessage, render
from bot.discord_adapter.server_locale import server_locale
from bot.i18n import Words
from bot.metrics import Metrics
from bot.waiting import wait_set
from storage.db import Database
from storage.outbox import OutboxRepository, OutboxRow
from storage.run_drafts import RunDraft, RunDraftRepository
from storage.run_files import RunFileRepository

log = structlog.get_logger(__name__)

MAX_CHANNELS = 10


def _is_transient(error: BaseException) -> bool:
    return isinstance(error, PersonaTransientError) or is_transient(error)


class DeliveryWorker:
    def __init__(
        self,
        client: discord.Client,
        db: Database,
        outbox: OutboxRepository,
        *,
        on_delivered: Callable[[str], Awaitable[None]],
        give_up_after: float,
        executor_id: str,
        lease: float,
        on_failed: Callable[[str], Awaitable[None]] | None = None,
        persona: WebhookPersona | None = None,
        clock: Callable[[], float] = time.time,
        base_delay: float = 2.0,
        max_delay: float = 300.0,
        run_files: RunFileRepository | None = None,
        drafts: DiscordDrafts | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._client = client
        self._metrics = metrics
        self._db = db
        self._outbox = outbox
        self._run_files = run_files or RunFileRepository(db)
        self._drafts = drafts
        self._run_drafts = RunDraftRepository(db)
        self._on_delivered = on_delivered
        self._on_failed = on_failed
        self._give_up_after = give_up_after
        self._executor_id = executor_id
        self._lease = lease
        self._persona = persona
        self._notices = FailureNotices(client)
        self._started_at = clock()
        self._clock = clock
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._channels: dict[int, asyncio.Task[None]] = {}

    def wake(self) -> None:
        self._wake.set()

    async def start(self) -> None:
        """Retry at once what a previous process left undelivered, then keep delivering.

        That includes what this one's previous life (same executor id) held when it stopped, without waiting out its
        leases."""
        async with self._db.transaction() as tx:
            await self._outbox.release_claims(tx, self._executor_id)
            await self._outbox.retry_pending_now(tx, self._clock())
        self._task = asyncio.create_task(self._loop(), name="outbox-delivery")

    async def close(self) -> None:
        """Stop delivering, and release the rows this process holds: any process (another one running, or this
        one's next life) takes them over at once, reading back first what may already be posted."""
        await self.stop()
        try:
            async with self._db.transaction() as tx:
                released = await self._outbox.release_claims(tx, self._executor_id)
        except Exception as error:  # the database gone: the claims run out after their lease instead
            log.warning("delivery_claims_not_released", error=repr(error))
            return
        if released:
            log.info("delivery_claims_released", rows=released)

    async def stop(self) -> None:
        """Stop delivering, leaving the rows this process holds claimed.

        A process that dies leaves them so too: another takes them over once their lease has run out."""
        tasks = [task for task in (self._task, *self._channels.values()) if task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._task = None

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                next_at = await self._start_due_channels()
            except Exception:
                log.exception("outbox_loop_failed")
                next_at = self._clock() + self._base_delay
            # look again within a lease even with nothing due here: other processes add rows, and may die
            timeout = self._lease if next_at is None else min(self._lease, max(0.0, next_at - self._clock()))
            await wait_set(self._wake, timeout)

    async def _start_due_channels(self) -> float | None:
        """Start delivering each idle channel whose oldest row is due; return when the next one will be due.
        A channel already delivering wakes the loop when it stops, so it is not waited for here."""
        now = self._clock()
        next_at: float | None = None
        for channel_id, due_at in await self._outbox.heads():
            if channel_id in self._channels:
                continue
            if due_at > now:
                next_at = due_at if next_at is None else min(next_at, due_at)
            elif len(self._channels) < MAX_CHANNELS:
                task = asyncio.create_task(self._drain(channel_id), name=f"outbox-channel-{channel_id}")
                self._channels[channel_id] = task
                task.add_done_callback(functools.partial(self._drained, channel_id))
        return next_at

    def _drained(self, channel_id: int, _done: asyncio.Task[None]) -> None:
        self._channels.pop(channel_id, None)
        self._wake.set()

    async def _drain(self, channel_id: int) -> None:
        """Deliver the channel's rows oldest first, each once claimed, until one stops it.

        It stops when none is left, the oldest must wait (backoff), or another process holds it."""
        try:
            while (claimed := await self._claim(channel_id)) is not None:
                await self._deliver_leased(*claimed)
        except Exception:
            log.exception("outbox_channel_failed", channel_id=channel_id)
            await asyncio.sleep(self._base_delay)  # then the loop starts this channel again

    async def _claim(self, channel_id: int) -> tuple[OutboxRow, float] | None:
        """The channel's oldest row, claimed, and until when."""
        now = self._clock()
        until = now + self._lease
        row = await self._outbox.claim_head(channel_id, self._executor_id, now, until)
        return None if row is None else (row, until)

    async def _deliver_leased(self, row: OutboxRow, held_until: float) -> None:
        """Deliver ``row``, renewing its claim every third of the lease; if the claim turns out lost (this process
        stalled past its lease and another took the row over), stop before posting anything more."""
        delivering = asyncio.create_task(self._deliver(row), name=f"outbox-row-{row.id}")
        try:
            while not (await asyncio.wait({delivering}, timeout=self._lease / 3))[0]:
                until = self._clock() + self._lease
                if not await self._outbox.renew(row.id, self._executor_id, held_until, until):
                    log.warning("delivery_claim_lost", outbox_id=row.id, channel_id=row.channel_id)
                    return
                held_until = until
            delivering.result()
        finally:
            delivering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await delivering

    async def _files(self, announcement: Announcement) -> dict[str, bytes]:
        """Each posted file's bytes, by the name it is posted under."""
        stored: dict[str, dict[str, bytes]] = {}
        found: dict[str, bytes] = {}
        for file in announcement.files:
            run_id = file.run_id or announcement.run_id
            if run_id not in stored:
                stored[run_id] = await self._run_files.contents(run_id)
            if (content := stored[run_id].get(file.stored or file.name)) is not None:
                found[file.name] = content
        return found

    async def _deliver(self, row: OutboxRow) -> None:
        bound = log.bind(outbox_id=row.id, run_id=row.run_id, channel_id=row.channel_id)
        announcement = Announcement.model_validate_json(row.payload_json)
        message_ids = list(row.message_ids)
        draft = await self._draft(row)
        try:
            locale = server_locale(self._client, row.channel_id, announcement.guild_id)
            messages = render(announcement, await self._files(announcement), locale)
            last = len(messages) - 1
            for index in range(row.parts_sent, len(messages)):
                message_id = None
                if draft is not None and self._drafts is not None and index < len(draft.message_ids):
                    message_id = await self._drafts.edit_over(
                        draft, index, messages[index], announcement.mention_user_id
                    )
                if message_id is None:
                    message_id = await self._post(row, announcement, messages[index], index)
                message_ids.append(message_id)
                if index < last or draft is not None:  # else the last part is recorded with the delivered mark
                    async with self._db.transaction() as tx:
                        await self._outbox.record_part(tx, row.id, index + 1, message_ids)
            if draft is not None and self._drafts is not None:
                await self._drafts.trim(draft, len(messages))
        except Exception as error:
            await self._attempt_failed(row, announcement, error, bound)
            return
        async with self._db.transaction() as tx:
            delivered_at = self._clock()
            await self._outbox.mark_delivered(tx, row.id, delivered_at, len(messages), message_ids)
            if draft is not None:
                await self._run_drafts.delete(tx, draft.run_id)
        bound.info("delivered", message_ids=message_ids)
        if self._metrics is not None:
            self._metrics.delivery_lag.observe(max(0.0, delivered_at - row.created_at))
        if row.run_id is not None and row.notice is None:
            await self._on_delivered(row.run_id)

    async def _draft(self, row: OutboxRow) -> RunDraft | None:
        """The answer's draft this row's text goes over: the run's own announcement, in the draft's channel."""
        if row.run_id is None or row.notice is not None:
            return None
        draft = await self._run_drafts.get(row.run_id)
        return draft if draft is not None and draft.channel_id == row.channel_id else None

    async def _attempt_failed(
        self, row: OutboxRow, announcement: Announcement, error: Exception, bound: structlog.BoundLogger
    ) -> None:
        """Retry a transient failure until the give-up bound has passed; then, or on a permanent failure, end
        the row as failed together with the notice that tells its requester."""
        attempts, now, reason = row.attempts + 1, self._clock(), error_words(error)
        transient = _is_transient(error)
        if transient:
            failing_for = now - (row.first_failed_at if row.first_failed_at is not None else now)
            if failing_for < self._give_up_after:
                await self._retry(row, attempts, reason, bound)
                return
            reason = Words("delivery-gave-up", {"after": format_runtime(failing_for), "reason": reason})
        try:
            notice = await self._notices.for_failed(row, announcement, reason, permanent=not transient)
        except (discord.HTTPException, *NETWORK_ERRORS) as notice_error:
            if _is_transient(notice_error):
                await self._retry(row, attempts, error_words(notice_error), bound)
                return
            bound.warning("notice_dm_refused", error=describe_error(notice_error))
            notice = None
        async with self._db.transaction() as tx:
            await self._outbox.mark_failed(tx, row, attempts, str(reason), notice, now, json.dumps(reason.as_data()))
        bound.error(
            "delivery_failed", attempts=attempts, error=str(reason), requester_told_via=notice.via if notice else None
        )
        if notice is not None:
            self.wake()
        if row.run_id is not None and row.notice is None and self._on_failed is not None:
            await self._on_failed(row.run_id)

    async def _retry(self, row: OutboxRow, attempts: int, reason: Words, bound: structlog.BoundLogger) -> None:
        """Try the row again after a backoff; ``reason`` is kept in English and as words."""
        delay = backoff_delay(self._base_delay, attempts, self._max_delay)
        now = self._clock()
        async with self._db.transaction() as tx:
            words = json.dumps(reason.as_data())
            await self._outbox.schedule_retry(tx, row.id, attempts, now + delay, str(reason), now, words)
        if self._metrics is not None:
            self._metrics.delivery_retries.inc()
        bound.warning("delivery_retry_scheduled", attempts=attempts, delay=delay, error=str(reason))

    async def _post(self, row: OutboxRow, announcement: Announcement, message: OutgoingMessage, index: int) -> int:
        """Post one part, unless it may already exist and the channel shows it does.

        It goes as the sub-agent's persona in a bound thread when possible, else as the bot."""
        may_exist = row.attempts > 0 or row.created_at < self._started_at or row.claimed_by is not None
        if may_exist:
            taken = await self._outbox.posted_in_channel(row.channel_id, since=row.created_at - CLOCK_SKEW_SECONDS)
            reply_to = announcement.reply_to_message_id if index == 0 else None
            posted = await find_posted(
                self._client, row.channel_id, message.content, since=row.created_at, taken=taken, reply_to=reply_to
            )
            if posted is not None:
                return posted
        if self._persona is not None and not message.attachments:
            target = await self._persona.target(row.channel_id)
            if target is not None:
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
        files = [discord.File(io.BytesIO(blob), name) for name, blob in message.attachments]
        # send() takes None for "no files" and "no reference" (its own defaults); its overloads do not say so.
        return await channel.send(
            message.content,
            files=files or None,  # type: ignore[arg-type]
            nonce=nonce_for(row.idempotency_key, index),
            reference=reference,  # type: ignore[arg-type]
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=mentioned, replied_user=True),
        )
