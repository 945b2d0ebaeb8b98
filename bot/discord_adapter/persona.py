"""Posting into a bound thread under the sub-agent's own name, ``🤖 <label>``.

It goes through one webhook per parent channel, falling back to the bot's identity when webhooks are not permitted.

Webhook execution takes no nonce, so exactly-once is kept another way: the request is made without library
retries (a lost answer is retried by the delivery worker, not blindly), and the worker reads the thread back
before re-sending a part that may exist (``read_back``), as it does for the bot's own posts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import aiohttp
import discord
import structlog

from bot.keyed_locks import KeyedLocks
from storage.bindings import BindingRepository
from storage.db import Database
from storage.webhooks import WebhookRepository

WEBHOOK_NAME = "threadbound agents"
NO_WEBHOOK_RETRY_SECONDS = 600
UNKNOWN_WEBHOOK = 10015

log = structlog.get_logger(__name__)


class PersonaUnavailable(Exception):
    """Use the bot's own identity for this post."""


class PersonaTransientError(Exception):
    """Discord did not answer in a way that says whether the post exists: retry later (after a read-back)."""


@dataclass(frozen=True)
class PersonaTarget:
    parent_channel_id: int
    thread_id: int
    webhook_id: int
    token: str


class WebhookPersona:
    def __init__(
        self, client: discord.Client, db: Database, webhooks: WebhookRepository, bindings: BindingRepository
    ) -> None:
        self._client = client
        self._db = db
        self._webhooks = webhooks
        self._bindings = bindings
        self._refused: dict[int, float] = {}
        self._creating: KeyedLocks[int] = KeyedLocks()
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def target(self, channel_id: int) -> PersonaTarget | None:
        """Where to post as a persona in ``channel_id``, or ``None``.

        ``None`` is for a channel that is not a bound thread with a parent."""
        binding = await self._bindings.get(channel_id)
        if binding is None or binding.parent_channel_id is None:
            return None
        parent = binding.parent_channel_id
        async with self._creating.hold(parent):  # threads of one parent share a webhook
            if time.monotonic() < self._refused.get(parent, 0):
                return None
            self._refused.pop(parent, None)  # its wait is over
            stored = await self._webhooks.get(parent) or await self._create(parent)
        return PersonaTarget(parent, channel_id, *stored) if stored else None

    async def _create(self, parent: int) -> tuple[int, str] | None:
        channel = self._client.get_partial_messageable(parent)
        try:
            payload = await self._client.http.create_webhook(channel.id, name=WEBHOOK_NAME)
        except discord.HTTPException as error:
            log.info("persona_webhook_unavailable", channel_id=parent, error=repr(error))
            self._refused[parent] = time.monotonic() + NO_WEBHOOK_RETRY_SECONDS
            return None
        async with self._db.transaction() as tx:
            await self._webhooks.put(tx, parent, int(payload["id"]), payload["token"])
        return int(payload["id"]), payload["token"]

    async def post(self, target: PersonaTarget, content: str, username: str, mention_user_id: int | None) -> int:
        return await self._request("POST", target, "", content, mention_user_id, username=username)

    async def edit(self, target: PersonaTarget, message_id: int, content: str, mention_user_id: int | None) -> int:
        """Replace the text of a message the persona posted (a draft answer)."""
        return await self._request("PATCH", target, f"/messages/{message_id}", content, mention_user_id)

    async def delete(self, target: PersonaTarget, message_id: int) -> None:
        """Delete a message the persona posted."""
        if self._session is None:
            self._session = aiohttp.ClientSession()
        url = f"{discord.http.Route.BASE}/webhooks/{target.webhook_id}/{target.token}/messages/{message_id}"
        try:
            async with self._session.delete(url, params={"thread_id": str(target.thread_id)}) as response:
                if response.status not in (204, 404):
                    raise PersonaUnavailable(f"webhook answered {response.status}")
        except aiohttp.ClientError as error:
            raise PersonaTransientError(f"the persona webhook could not be reached ({type(error).__name__})") from None

    async def _request(
        self,
        method: str,
        target: PersonaTarget,
        path: str,
        content: str,
        mention_user_id: int | None,
        *,
        username: str | None = None,
    ) -> int:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        url = f"{discord.http.Route.BASE}/webhooks/{target.webhook_id}/{target.token}{path}"
        users = [str(mention_user_id)] if mention_user_id else []
        body: dict[str, object] = {"content": content, "allowed_mentions": {"parse": [], "users": users}}
        if username is not None:
            body["username"] = username[:80]
        try:
            async with self._session.request(
                method, url, params={"wait": "true", "thread_id": str(target.thread_id)}, json=body
            ) as response:
                if response.status == 200:
                    return int((await response.json(content_type=None))["id"])
                if response.status == 404 and (await response.json(content_type=None)).get("code") == UNKNOWN_WEBHOOK:
                    async with self._db.transaction() as tx:
                        await self._webhooks.forget(tx, target.parent_channel_id)
                    raise PersonaUnavailable("webhook deleted")
                if response.status >= 500 or response.status == 429:
                    raise PersonaTransientError(f"the persona webhook answered {response.status}")
                raise PersonaUnavailable(f"webhook answered {response.status}: {await response.text()}")
        except aiohttp.ClientError as error:
            unreachable = f"the persona webhook could not be reached ({type(error).__name__})"
            raise PersonaTransientError(unreachable) from None
