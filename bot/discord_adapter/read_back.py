"""Look before re-sending: a part that may already exist — a retry after a lost answer, or a row an earlier
process left — is first searched for among the channel's messages posted since its row was written.

Discord's nonce de-duplication lasts only a few minutes and webhooks take no nonce, so this read-back, not the
nonce, is what keeps a long outage or a restart from posting an announcement twice. Fetched messages carry no
nonce, so a part is recognised by who posted it (the bot itself, or a webhook its application owns: the
personas) and its exact content; a completion's first part names the run, so it is not mistaken for another.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import discord
import structlog

if TYPE_CHECKING:
    from discord.types.message import Message as MessagePayload  # at run time: a circular import in discord.py

NONCE_LENGTH = 25
PAGE_SIZE = 100
MAX_PAGES = 10
CLOCK_SKEW_SECONDS = 60.0

log = structlog.get_logger(__name__)


def nonce_for(idempotency_key: str, part: int) -> str:
    """Discord nonces are at most 25 characters: a digest of the key and the part index.

    Sent with ``enforce_nonce``, a post retried within minutes returns the message the first one made."""
    return hashlib.sha256(f"{idempotency_key}#{part}".encode()).hexdigest()[:NONCE_LENGTH]


def _ours(client: discord.Client, message: MessagePayload) -> bool:
    if message.get("webhook_id") is None:
        return client.user is not None and message["author"]["id"] == str(client.user.id)
    return message.get("application_id") == str(client.application_id)


def _answers(message: MessagePayload, reply_to: int | None) -> bool:
    """Whether ``message`` answers ``reply_to``, as far as it can tell.

    A reply the bot posts itself points at the message it answers; a webhook's post cannot."""
    if reply_to is None or message.get("webhook_id") is not None:
        return True
    reference = message.get("message_reference")
    return reference is not None and str(reference.get("message_id")) == str(reply_to)


async def find_posted(
    client: discord.Client,
    channel_id: int,
    content: str,
    *,
    since: float,
    taken: set[int],
    reply_to: int | None = None,
) -> int | None:
    """The id of our first message in ``channel_id`` after ``since`` with exactly ``content``.

    ``since`` is epoch seconds. Not one already recorded as another part or row (``taken``: the same words can be two
    answers), and, for a reply, answering ``reply_to`` — or ``None``. A channel whose history the bot may not
    read cannot tell: ``None``, and the caller posts (the nonce still guards its first minutes)."""
    after = discord.utils.time_snowflake(datetime.fromtimestamp(since - CLOCK_SKEW_SECONDS, UTC))
    for _ in range(MAX_PAGES):
        try:
            page = await client.http.logs_from(channel_id, PAGE_SIZE, after=after)
        except discord.Forbidden:
            log.warning("read_back_unavailable", channel_id=channel_id, reason="cannot read the channel's history")
            return None
        for message in sorted(page, key=lambda m: int(m["id"])):
            if (
                message.get("content") == content
                and int(message["id"]) not in taken
                and _ours(client, message)
                and _answers(message, reply_to)
            ):
                return int(message["id"])
        if len(page) < PAGE_SIZE:
            return None
        after = max(int(message["id"]) for message in page)
    log.warning("read_back_exhausted", channel_id=channel_id, messages=PAGE_SIZE * MAX_PAGES)
    return None
