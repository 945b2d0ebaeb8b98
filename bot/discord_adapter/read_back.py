"""Look before re-sending: a part that may already exist — a retry after a lost answer, or a row an earlier
process left — is first searched for among the channel's messages posted since its row was written.

Discord's nonce de-duplication lasts only a few minutes and webhooks take no nonce, so this read-back, not the
nonce, is what keeps a long outage or a restart from posting an announcement twice. Fetched messages carry no
nonce, so a part is recognised by who posted it (the bot itself, or a webhook its application owns: the
personas) and its exact content; a completion's first part names the run, so it is not mistaken for another.
"""

from __future__ import annotations

from datetime import UTC, datetime

import discord
import structlog

PAGE_SIZE = 100
MAX_PAGES = 10
CLOCK_SKEW_SECONDS = 60.0

log = structlog.get_logger(__name__)


def _ours(client: discord.Client, message: dict) -> bool:
    if message.get("webhook_id") is None:
        return client.user is not None and message["author"]["id"] == str(client.user.id)
    return message.get("application_id") == str(client.application_id)


async def find_posted(client: discord.Client, channel_id: int, content: str, *, since: float) -> int | None:
    """The id of the first message in ``channel_id`` posted by us after ``since`` (epoch seconds) with exactly
    ``content``, or ``None``."""
    after = discord.utils.time_snowflake(datetime.fromtimestamp(since - CLOCK_SKEW_SECONDS, UTC))
    for _ in range(MAX_PAGES):
        page = await client.http.logs_from(channel_id, PAGE_SIZE, after=after)
        for message in sorted(page, key=lambda m: int(m["id"])):
            if message.get("content") == content and _ours(client, message):
                return int(message["id"])
        if len(page) < PAGE_SIZE:
            return None
        after = max(int(message["id"]) for message in page)
    log.warning("read_back_exhausted", channel_id=channel_id, messages=PAGE_SIZE * MAX_PAGES)
    return None
