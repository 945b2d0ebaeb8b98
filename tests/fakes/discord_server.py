"""Loopback fake of Discord (REST API + gateway websocket) that the real discord.py 2.7.1 client logs in to.

Why a real server: it exercises discord.py end to end (HTTP serialisation, rate-limit handling, gateway
parsing into ``Member``/``Thread`` objects, ``CommandTree`` dispatch, interaction callbacks, webhooks), and
lets tests assert on the wire, which is what Discord enforces (3 s ack deadline, ephemeral flag, nonces,
allowed_mentions). Everything runs on 127.0.0.1 with an ephemeral port, on the test's event loop.

Point discord.py at it (save and restore both in fixtures)::

    discord.http.Route.BASE = fake.api_base_url                                # http://127.0.0.1:PORT/api/v10
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.gateway_url)  # ws://127.0.0.1:PORT/

Harness sketch::

    fake = FakeDiscord(bot_token="fake-bot-token"); await fake.start()
    guild = fake.add_guild("Test Guild"); channel = fake.add_text_channel(guild, "general")
    alice = fake.add_user("alice"); fake.add_member(guild, alice, permissions=0)
    ... start a bot with guild_ready_timeout=0.05 (discord.py otherwise waits 2 s before on_ready) ...
    inter = await fake.slash(alice, channel, "subagents spawn", agent="main", task="do it")
    ack = await fake.wait_ack(inter); msg = await fake.wait_followup(inter)
    await fake.stop()

Wire details discord.py 2.7.1 depends on (each one broke login or parsing when missing):

* JSON bodies carry exactly ``Content-Type: application/json`` (no charset), or discord.py treats them as text.
* 429s carry ``Via`` (else: "Cloudflare ban", raised at once), ``retry_after`` in the body, ``X-RateLimit-*``.
* ``POST /interactions/{id}/{token}/callback?with_response=1`` answers 200 with
  ``{"interaction": {...}, "resource": {...}}``; a 204 breaks ``send_message``/``defer``.
* INTERACTION_CREATE carries ``version`` and ``attachment_size_limit``; member payloads carry ``flags``.
* READY's ``resume_gateway_url`` is where discord.py reconnects, so it is the loopback URL.
* discord.py asks for ``compress=zlib-stream`` but accepts uncompressed TEXT frames, which is what we send.

Behaviour beyond the happy path, so tests catch what real Discord would reject: callbacks later than
``interaction_ack_deadline`` (404 10062) or repeated (400 40060); nonce dedupe with ``enforce_nonce`` for
``nonce_window`` on the fake clock (fetched messages carry no nonce, as on Discord);
content over 2000 chars or empty messages (400); more than 10 files on a message (400 50035) or a file over
``attachment_size_limit`` (413 40005); archived/locked threads (400 50083); DMs to a user who refuses
them (403 50007, ``FakeUser.accepts_dms``); missing bot permissions
(403 50013, guild-level permissions only, no channel overwrites); MESSAGE_CONTENT intent blanking of content;
invalid command names/descriptions on sync (400 50035). Unknown routes answer 404 and are listed in
``fake.unhandled_requests`` so missing routes are obvious.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import math
import mimetypes
import re
import secrets
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import discord
from aiohttp import web

from tests.polling import eventually

__all__ = [
    "CallbackRecord",
    "FailureRule",
    "FakeChannel",
    "FakeDiscord",
    "FakeGuild",
    "FakeInteraction",
    "FakeMember",
    "FakeRole",
    "FakeUser",
    "FakeWebhook",
    "MessageMeta",
    "RecordedRequest",
    "ResponseEvent",
]

log = logging.getLogger("tests.fakes.discord_server")

API_PREFIX = "/api/v10"
DISCORD_EPOCH_MS = 1420070400000

# Message flags
FLAG_HAS_THREAD = 1 << 5
FLAG_EPHEMERAL = 1 << 6
FLAG_LOADING = 1 << 7
DISCORD_LOCALES = frozenset(locale.value for locale in discord.Locale)

# Channel types
CH_TEXT, CH_DM, CH_CATEGORY, CH_NEWS = 0, 1, 4, 5
CH_NEWS_THREAD, CH_PUBLIC_THREAD, CH_PRIVATE_THREAD, CH_FORUM = 10, 11, 12, 15
THREAD_TYPES = (CH_NEWS_THREAD, CH_PUBLIC_THREAD, CH_PRIVATE_THREAD)

# Gateway intents the fake filters on
INTENT_GUILD_MEMBERS = 1 << 1
INTENT_GUILD_PRESENCES = 1 << 8
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_MESSAGE_CONTENT = 1 << 15
PRIVILEGED_INTENTS = INTENT_GUILD_MEMBERS | INTENT_GUILD_PRESENCES | INTENT_MESSAGE_CONTENT

ARCHIVE_DURATIONS = (60, 1440, 4320, 10080)
ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024
MAX_ATTACHMENTS = 10  # files per message

ALL_PERMISSIONS = discord.Permissions.all().value
DEFAULT_EVERYONE_PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    send_messages_in_threads=True,
    create_public_threads=True,
    read_message_history=True,
    add_reactions=True,
    embed_links=True,
    attach_files=True,
    use_application_commands=True,
).value
DEFAULT_BOT_PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    send_messages_in_threads=True,
    create_public_threads=True,
    create_private_threads=True,
    manage_threads=True,
    manage_messages=True,
    manage_webhooks=True,
    read_message_history=True,
    add_reactions=True,
    embed_links=True,
    attach_files=True,
    use_application_commands=True,
).value

_P = discord.Permissions
PERM_ADMIN = _P(administrator=True).value
PERM_SEND = _P(send_messages=True).value
PERM_SEND_THREADS = _P(send_messages_in_threads=True).value
PERM_PUBLIC_THREADS = _P(create_public_threads=True).value
PERM_PRIVATE_THREADS = _P(create_private_threads=True).value
PERM_MANAGE_THREADS = _P(manage_threads=True).value
PERM_MANAGE_WEBHOOKS = _P(manage_webhooks=True).value
PERM_VIEW = _P(view_channel=True).value

_DEFAULT_ERROR_MESSAGES = {
    400: "400: Bad Request",
    401: "401: Unauthorized",
    403: "403: Forbidden",
    404: "404: Not Found",
    405: "405: Method Not Allowed",
    429: "You are being rate limited.",
    500: "500: Internal Server Error",
    502: "502: Bad Gateway",
    503: "503: Service Unavailable",
    504: "504: Gateway Timeout",
}

_FileParts = list[tuple[str, str, bytes, str]]  # (form field, filename, bytes, content type)
_BODY: web.RequestKey[Any] = web.RequestKey("fake_discord_body", object)
_FILES: web.RequestKey[_FileParts] = web.RequestKey("fake_discord_files", list)


# --------------------------------------------------------------------------------------------------------------
# helpers


class _ApiError(Exception):
    def __init__(self, status: int, code: int, message: str, errors: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {code} {message}")
        self.status, self.code, self.message, self.errors = status, code, message, errors

    def response(self) -> web.Response:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.errors is not None:
            body["errors"] = self.errors
        return _json_response(body, status=self.status)


def _form_error(path: str, code: str, message: str) -> _ApiError:
    """400 50035 "Invalid Form Body" with Discord's nested ``errors`` shape for one field path like ``0.name``."""
    errors: dict[str, Any] = {"_errors": [{"code": code, "message": message}]}
    for part in reversed(path.split(".")):
        errors = {part: errors}
    return _ApiError(400, 50035, "Invalid Form Body", errors)


def _json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # discord.py parses a body as JSON only when the header is exactly "application/json" (no charset),
    # which rules out aiohttp's json_response / text= helpers.
    all_headers = {"Content-Type": "application/json"}
    if headers:
        all_headers.update(headers)
    return web.Response(status=status, body=json.dumps(data).encode(), headers=all_headers)


def _as_fetched(msg: dict[str, Any]) -> dict[str, Any]:
    """A message as a fetch returns it: Discord echoes a nonce only in the create answer and the gateway event."""
    return {key: value for key, value in msg.items() if key != "nonce"}


def _iso(dt: datetime) -> str:
    return dt.isoformat()


def _id_of(obj: Any) -> int:
    """Accept a Fake* object, a payload dict, a discord.py object or a raw id."""
    if isinstance(obj, dict):
        return int(obj["id"])
    if hasattr(obj, "id"):
        return int(obj.id)
    return int(obj)


def _truthy_query(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "yes")


# --------------------------------------------------------------------------------------------------------------
# state objects (plain data; payload() renders what Discord would send)


@dataclass(eq=False)
class FakeUser:
    id: int
    name: str
    bot: bool = False
    global_name: str | None = None
    accepts_dms: bool = True  # False: the user's privacy settings refuse DMs from the bot (403 50007)

    @property
    def mention(self) -> str:
        return f"<@{self.id}>"

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "username": self.name,
            "discriminator": "0",
            "global_name": self.global_name,
            "avatar": None,
            "bot": self.bot,
            "system": False,
            "public_flags": 0,
        }


@dataclass(eq=False)
class FakeRole:
    id: int
    guild_id: int
    name: str
    permissions: int
    position: int = 0
    mentionable: bool = False
    bot_id: int | None = None  # managed role of a bot

    @property
    def mention(self) -> str:
        return f"<@&{self.id}>"

    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "name": self.name,
            "permissions": str(self.permissions),
            "position": self.position,
            "color": 0,
            "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
            "hoist": False,
            "managed": self.bot_id is not None,
            "mentionable": self.mentionable,
            "icon": None,
            "unicode_emoji": None,
            "flags": 0,
        }
        if self.bot_id is not None:
            data["tags"] = {"bot_id": str(self.bot_id)}
        return data


@dataclass(eq=False)
class FakeMember:
    guild_id: int
    user: FakeUser
    role_ids: list[int] = field(default_factory=list)
    nick: str | None = None
    joined_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    # role that carries the per-member permissions given to add_member(permissions=...)
    permission_role_id: int | None = None

    @property
    def id(self) -> int:
        return self.user.id

    def payload(self, *, with_user: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "roles": [str(r) for r in self.role_ids],
            "nick": self.nick,
            "avatar": None,
            "banner": None,
            "joined_at": _iso(self.joined_at),
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "pending": False,
            "flags": 0,  # discord.py: Member.__init__ reads data['flags']
            "communication_disabled_until": None,
        }
        if with_user:
            data["user"] = self.user.payload()
        return data


@dataclass(eq=False)
class FakeChannel:
    """Text channel, DM channel, category, forum or thread (Discord models all of them as channels)."""

    id: int
    type: int
    name: str | None
    guild_id: int | None = None
    parent_id: int | None = None
    position: int = 0
    topic: str | None = None
    recipient_ids: list[int] = field(default_factory=list)
    last_message_id: int | None = None
    rate_limit_per_user: int = 0
    # thread-only
    owner_id: int | None = None
    archived: bool = False
    locked: bool = False
    invitable: bool = True
    auto_archive_duration: int = 1440
    archive_timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    create_timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    message_count: int = 0
    total_message_sent: int = 0
    member_ids: set[int] = field(default_factory=set)
    deleted: bool = False

    @property
    def is_thread(self) -> bool:
        return self.type in THREAD_TYPES

    @property
    def mention(self) -> str:
        return f"<#{self.id}>"

    def thread_member_payload(self, user_id: int) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "user_id": str(user_id),
            "join_timestamp": _iso(self.create_timestamp),
            "flags": 0,
        }

    def payload(self, *, bot_id: int | None = None, users: dict[int, FakeUser] | None = None) -> dict[str, Any]:
        if self.type == CH_DM:
            return {
                "id": str(self.id),
                "type": CH_DM,
                "last_message_id": str(self.last_message_id) if self.last_message_id else None,
                "recipients": [users[u].payload() for u in self.recipient_ids if users and u in users],
                "flags": 0,
            }
        data: dict[str, Any] = {
            "id": str(self.id),
            "type": self.type,
            "guild_id": str(self.guild_id),
            "name": self.name,
            "parent_id": str(self.parent_id) if self.parent_id else None,
            "last_message_id": str(self.last_message_id) if self.last_message_id else None,
            "rate_limit_per_user": self.rate_limit_per_user,
            "flags": 0,
        }
        if self.is_thread:
            data.update(
                owner_id=str(self.owner_id),
                message_count=self.message_count,
                member_count=len(self.member_ids),
                total_message_sent=self.total_message_sent,
                applied_tags=[],
                thread_metadata={
                    "archived": self.archived,
                    "auto_archive_duration": self.auto_archive_duration,
                    "archive_timestamp": _iso(self.archive_timestamp),
                    "locked": self.locked,
                    "invitable": self.invitable,
                    "create_timestamp": _iso(self.create_timestamp),
                },
            )
            if bot_id is not None and bot_id in self.member_ids:
                data["member"] = self.thread_member_payload(bot_id)
        else:
            data.update(
                position=self.position,
                permission_overwrites=[],
                topic=self.topic,
                nsfw=False,
                default_auto_archive_duration=1440,
            )
        return data


@dataclass(eq=False)
class FakeGuild:
    id: int
    name: str
    owner_id: int
    roles: dict[int, FakeRole] = field(default_factory=dict)
    members: dict[int, FakeMember] = field(default_factory=dict)
    channel_ids: list[int] = field(default_factory=list)  # channels and threads, creation order
    joined_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    locale: str = "en-US"

    @property
    def everyone_role(self) -> FakeRole:
        return self.roles[self.id]

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "banner": None,
            "description": None,
            "owner_id": str(self.owner_id),
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 1,
            "explicit_content_filter": 0,
            "roles": [r.payload() for r in self.roles.values()],
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "public_updates_channel_id": None,
            "safety_alerts_channel_id": None,
            "vanity_url_code": None,
            "premium_tier": 0,
            "premium_subscription_count": 0,
            "preferred_locale": self.locale,
            "nsfw_level": 0,
            "premium_progress_bar_enabled": False,
        }


@dataclass(eq=False)
class FakeWebhook:
    id: int
    token: str
    channel_id: int
    guild_id: int | None
    name: str
    application_id: int
    creator_id: int

    def payload(self, users: dict[int, FakeUser]) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "type": 1,
            "guild_id": str(self.guild_id) if self.guild_id else None,
            "channel_id": str(self.channel_id),
            "name": self.name,
            "avatar": None,
            "token": self.token,
            "application_id": str(self.application_id),
            "user": users[self.creator_id].payload(),
        }


@dataclass
class MessageMeta:
    """What the fake knows about a message beyond its payload (what the bot asked for, not what Discord shows)."""

    id: int
    channel_id: int
    author_id: int
    source: str  # "rest" | "user" | "webhook" | "interaction"
    created_at: float  # fake clock
    public: bool
    nonce: Any = None
    allowed_mentions: dict[str, Any] | None = None
    files: list[tuple[str, bytes]] = field(default_factory=list)
    interaction_id: int | None = None
    webhook_id: int | None = None
    username: str | None = None  # webhook username override
    avatar_url: str | None = None  # webhook avatar override
    deleted: bool = False
    edits: int = 0
    edited_at: list[float] = field(default_factory=list)  # fake clock, one entry per edit


@dataclass
class CallbackRecord:
    """One ``POST /interactions/{id}/{token}/callback``, answered or rejected."""

    type: int
    flags: int
    data: dict[str, Any]
    elapsed: float  # seconds after INTERACTION_CREATE was dispatched (fake clock)
    status_code: int
    error_code: int | None = None
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & FLAG_EPHEMERAL)


@dataclass
class ResponseEvent:
    """A message-visible step of an interaction: initial/deferred reply, @original edit, followup, update."""

    kind: str  # "initial" | "deferred" | "original_edit" | "followup" | "followup_edit" | "update"
    message: dict[str, Any]  # snapshot after the step

    @property
    def ephemeral(self) -> bool:
        return bool(self.message.get("flags", 0) & FLAG_EPHEMERAL)


@dataclass(eq=False)
class FakeInteraction:
    id: int
    token: str
    type: int  # 2 command, 3 component, 4 autocomplete, 5 modal submit
    payload: dict[str, Any]
    user_id: int
    channel_id: int
    guild_id: int | None
    command_name: str | None
    dispatched_at: float = 0.0  # fake clock
    callbacks: list[CallbackRecord] = field(default_factory=list)
    responses: list[ResponseEvent] = field(default_factory=list)
    message_ids: list[int] = field(default_factory=list)
    original_message_id: int | None = None
    component_message_id: int | None = None

    @property
    def acknowledged(self) -> bool:
        return any(c.status_code == 200 for c in self.callbacks)

    def __repr__(self) -> str:
        return f"<FakeInteraction id={self.id} type={self.type} command={self.command_name!r}>"


@dataclass
class FailureRule:
    method: str
    pattern: re.Pattern[str]
    status: int
    remaining: int
    after_commit: bool
    code: int
    message: str
    retry_after: float
    is_global: bool = False
    hits: int = 0


@dataclass
class RecordedRequest:
    """One REST request. Iterates as ``(method, path, json, status)``; ``path`` is relative to ``/api/v10``."""

    method: str
    path: str
    json: Any
    status: int = 0
    query: dict[str, str] = field(default_factory=dict)
    files: list[tuple[str, bytes]] = field(default_factory=list)
    at: float = 0.0  # fake clock
    injected: bool = False

    def __iter__(self) -> Iterator[Any]:
        return iter((self.method, self.path, self.json, self.status))


class _GatewaySession:
    def __init__(self, session_id: str, intents: int, shard: tuple[int, int] | None) -> None:
        self.id = session_id
        self.intents = intents
        self.shard = shard
        self.seq = 0
        self.ws: web.WebSocketResponse | None = None
        self.buffer: deque[tuple[int, str]] = deque(maxlen=2000)  # for RESUME replay
        self.lock = asyncio.Lock()

    @property
    def connected(self) -> bool:
        return self.ws is not None and not self.ws.closed

    async def send_dispatch(self, event: str, data: dict[str, Any]) -> bool:
        async with self.lock:
            self.seq += 1
            frame = json.dumps({"op": 0, "t": event, "s": self.seq, "d": data})
            self.buffer.append((self.seq, frame))
            return await self._send_raw(frame)

    async def _send_raw(self, frame: str) -> bool:
        ws = self.ws
        if ws is None or ws.closed:
            return False
        try:
            await ws.send_str(frame)
        except (ConnectionError, RuntimeError, aiohttp.ClientError) as exc:
            log.debug("gateway session %s: send failed (%r), marking disconnected", self.id, exc)
            self.ws = None
            return False
        return True


# --------------------------------------------------------------------------------------------------------------
# the fake


class FakeDiscord:
    def __init__(self, bot_token: str = "fake-bot-token", *, bot_name: str = "threadbound") -> None:
        self.bot_token = bot_token
        self.interaction_ack_deadline = 3.0
        self.interaction_token_ttl = 15 * 60.0
        self.nonce_window = 5 * 60.0
        self.heartbeat_interval_ms = 41250
        # None: every privileged intent is enabled in the "developer portal"; else the allowed bits (4014 otherwise)
        self.allowed_privileged_intents: int | None = None

        self._last_snowflake = 0
        self._clock_offset = 0.0
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._changed = asyncio.Event()
        self._background: set[asyncio.Task[Any]] = set()

        self.users: dict[int, FakeUser] = {}
        self.guilds: dict[int, FakeGuild] = {}
        self.channels: dict[int, FakeChannel] = {}
        self.webhooks: dict[int, FakeWebhook] = {}
        self.interactions: dict[int, FakeInteraction] = {}
        self._interactions_by_token: dict[str, FakeInteraction] = {}
        self._messages: dict[int, dict[str, Any]] = {}
        self._message_meta: dict[int, MessageMeta] = {}
        self._channel_message_ids: dict[int, list[int]] = {}
        self._global_commands: list[dict[str, Any]] = []
        self._guild_commands: dict[int, list[dict[str, Any]]] = {}
        self._attachment_blobs: dict[int, bytes] = {}
        self.cdn_requests: list[str] = []  # the paths of attachment downloads, in order (what a client fetched)
        self._failures: list[FailureRule] = []
        self.edit_rate_limit: tuple[int, float] | None = None
        """(edits, seconds): like Discord, a channel's message edits past this many in a window answer 429."""
        self._edits_by_channel: dict[int, deque[float]] = {}
        self.edits_rate_limited = 0  # edits answered 429 by ``edit_rate_limit``
        self._sessions: dict[str, _GatewaySession] = {}

        self.requests: list[RecordedRequest] = []
        self.unhandled_requests: list[tuple[str, str]] = []
        self.identify_payloads: list[dict[str, Any]] = []
        self.dispatched: list[tuple[str, dict[str, Any]]] = []
        self.allowed_mentions_log: list[dict[str, Any]] = []
        self.typing: list[tuple[int, float]] = []
        self.reactions: list[tuple[str, int, str]] = []  # (PUT|DELETE, message_id, emoji)

        self.application_id = self._snowflake()
        self.bot = self._new_user(bot_name, bot=True, user_id=self.application_id)
        self.app_owner = self._new_user("app-owner")

    # ---------------------------------------------------------------------------------------------- lifecycle

    async def start(self, port: int = 0) -> None:
        """Listen on ``port`` (0: an ephemeral one). A stopped fake can start again on its old port, with its
        state intact: Discord coming back after an outage."""
        app = web.Application(middlewares=[self._middleware], client_max_size=64 * 1024 * 1024)
        self._add_routes(app)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        self._port = self._runner.addresses[0][1]
        log.debug("fake discord listening on %s", self.base_url)

    async def stop(self) -> None:
        await self._flush_background()
        for session in list(self._sessions.values()):
            if session.connected and session.ws is not None:
                with contextlib.suppress(Exception):
                    await session.ws.close(code=1001, message=b"fake discord stopping")
        self._sessions.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeDiscord:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FakeDiscord.start() has not been awaited")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base_url(self) -> str:
        return f"{self.base_url}{API_PREFIX}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    @property
    def bot_user(self) -> dict[str, Any]:
        return self._self_user_payload()

    @property
    def bot_user_id(self) -> int:
        return self.bot.id

    @property
    def last_intents(self) -> int | None:
        return self.identify_payloads[-1].get("intents") if self.identify_payloads else None

    @property
    def connected_sessions(self) -> int:
        return sum(1 for s in self._sessions.values() if s.connected)

    # ---------------------------------------------------------------------------------------------- clock/ids

    def now(self) -> float:
        """Fake monotonic clock used for deadlines, token expiry and the nonce window."""
        return time.monotonic() + self._clock_offset

    def advance_time(self, seconds: float) -> None:
        """Move the fake clock forward (e.g. past the 15 minute interaction token lifetime); threads left quiet
        for their auto-archive duration meanwhile are archived, as Discord does."""
        self._clock_offset += seconds
        self._auto_archive_quiet_threads()

    def _auto_archive_quiet_threads(self) -> None:
        """Discord's inactivity auto-archive: a thread with no message for ``auto_archive_duration`` minutes
        (counted from its last message, else its creation) is archived by Discord itself (THREAD_UPDATE)."""
        now = self._wall()
        for thread in self.threads():
            if thread.archived:
                continue
            last = (
                discord.utils.snowflake_time(thread.last_message_id)
                if thread.last_message_id
                else (thread.create_timestamp)
            )
            if last + timedelta(minutes=thread.auto_archive_duration) <= now:
                thread.archived, thread.archive_timestamp = True, now
                self._schedule_dispatch("THREAD_UPDATE", self._channel_payload(thread), guild_id=thread.guild_id)

    def _wall(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self._clock_offset)

    def _snowflake(self) -> int:
        ms = int(self._wall().timestamp() * 1000) - DISCORD_EPOCH_MS  # ids carry the fake clock's time
        value = max(ms << 22, self._last_snowflake + 1)
        self._last_snowflake = value
        return value

    # ---------------------------------------------------------------------------------------------- world setup

    def _new_user(self, name: str, *, bot: bool = False, user_id: int | None = None) -> FakeUser:
        user = FakeUser(id=user_id or self._snowflake(), name=name, bot=bot)
        self.users[user.id] = user
        return user

    def add_user(self, name: str, *, bot: bool = False, global_name: str | None = None) -> FakeUser:
        user = self._new_user(name, bot=bot)
        user.global_name = global_name
        return user

    def add_guild(
        self,
        name: str,
        *,
        owner: FakeUser | None = None,
        everyone_permissions: int = DEFAULT_EVERYONE_PERMISSIONS,
        bot_permissions: int = DEFAULT_BOT_PERMISSIONS,
        locale: str = "en-US",
    ) -> FakeGuild:
        """A guild the bot is in. Members' effective permissions are @everyone | their roles (admin => all)."""
        owner = owner or self.app_owner
        guild = FakeGuild(id=self._snowflake(), name=name, owner_id=owner.id, locale=locale)
        guild.roles[guild.id] = FakeRole(
            id=guild.id, guild_id=guild.id, name="@everyone", permissions=everyone_permissions
        )
        self.guilds[guild.id] = guild
        bot_role = FakeRole(
            id=self._snowflake(),
            guild_id=guild.id,
            name=self.bot.name,
            permissions=bot_permissions,
            position=1,
            bot_id=self.bot.id,
        )
        guild.roles[bot_role.id] = bot_role
        guild.members[self.bot.id] = FakeMember(
            guild_id=guild.id, user=self.bot, role_ids=[bot_role.id], permission_role_id=bot_role.id
        )
        if owner is not self.app_owner:
            guild.members.setdefault(owner.id, FakeMember(guild_id=guild.id, user=owner))
        self._schedule_dispatch("GUILD_CREATE", None, guild_id=guild.id, per_session=self._guild_join_payload)
        return guild

    def add_role(self, guild: Any, name: str, permissions: int = 0, *, mentionable: bool = False) -> FakeRole:
        g = self._guild(guild)
        role = FakeRole(
            id=self._snowflake(),
            guild_id=g.id,
            name=name,
            permissions=int(permissions),
            position=len(g.roles),
            mentionable=mentionable,
        )
        g.roles[role.id] = role
        self._schedule_dispatch("GUILD_ROLE_CREATE", {"guild_id": str(g.id), "role": role.payload()}, guild_id=g.id)
        return role

    def add_member(
        self,
        guild: Any,
        user: FakeUser,
        *,
        permissions: int | discord.Permissions | None = None,
        roles: Iterable[FakeRole] = (),
        nick: str | None = None,
    ) -> FakeMember:
        """Add ``user`` to ``guild``. ``permissions`` becomes a per-member role (so discord.py's cache agrees)."""
        g = self._guild(guild)
        member = FakeMember(guild_id=g.id, user=user, role_ids=[r.id for r in roles], nick=nick)
        if permissions is not None:
            value = permissions.value if isinstance(permissions, discord.Permissions) else int(permissions)
            role = FakeRole(
                id=self._snowflake(), guild_id=g.id, name=f"perms:{user.name}", permissions=value, position=len(g.roles)
            )
            g.roles[role.id] = role
            member.role_ids.append(role.id)
            member.permission_role_id = role.id
            self._schedule_dispatch("GUILD_ROLE_CREATE", {"guild_id": str(g.id), "role": role.payload()}, guild_id=g.id)
        g.members[user.id] = member
        self._schedule_dispatch(
            "GUILD_MEMBER_ADD", {**member.payload(), "guild_id": str(g.id)}, guild_id=g.id, intent=INTENT_GUILD_MEMBERS
        )
        return member

    def set_member_permissions(self, guild: Any, user: Any, permissions: int | discord.Permissions) -> None:
        """Change a member's per-member permission role (works for the bot too: pass ``fake.bot``)."""
        g = self._guild(guild)
        member = g.members[_id_of(user)]
        value = permissions.value if isinstance(permissions, discord.Permissions) else int(permissions)
        if member.permission_role_id is None:
            role = FakeRole(id=self._snowflake(), guild_id=g.id, name=f"perms:{member.user.name}", permissions=value)
            g.roles[role.id] = role
            member.role_ids.append(role.id)
            member.permission_role_id = role.id
            self._schedule_dispatch("GUILD_ROLE_CREATE", {"guild_id": str(g.id), "role": role.payload()}, guild_id=g.id)
            self._schedule_dispatch("GUILD_MEMBER_UPDATE", {**member.payload(), "guild_id": str(g.id)}, guild_id=g.id)
        else:
            role = g.roles[member.permission_role_id]
            role.permissions = value
            self._schedule_dispatch("GUILD_ROLE_UPDATE", {"guild_id": str(g.id), "role": role.payload()}, guild_id=g.id)

    def add_text_channel(
        self, guild: Any, name: str, *, topic: str | None = None, news: bool = False, forum: bool = False
    ) -> FakeChannel:
        """A text channel (``news=True``: announcement channel; ``forum=True``: forum, where threads are posts)."""
        g = self._guild(guild)
        kind = CH_FORUM if forum else CH_NEWS if news else CH_TEXT
        channel = FakeChannel(
            id=self._snowflake(),
            type=kind,
            name=name,
            guild_id=g.id,
            position=len(g.channel_ids),
            topic=topic,
        )
        self._register_channel(channel)
        self._schedule_dispatch("CHANNEL_CREATE", self._channel_payload(channel), guild_id=g.id)
        return channel

    def add_thread(
        self,
        parent: Any,
        name: str,
        *,
        owner: FakeUser | None = None,
        private: bool = False,
        archived: bool = False,
        locked: bool = False,
        auto_archive_duration: int = 1440,
        bot_joined: bool = True,
    ) -> FakeChannel:
        """A thread that already exists (created by a user or a previous bot run)."""
        parent_ch = self._channel(parent)
        owner = owner or self.bot
        thread = FakeChannel(
            id=self._snowflake(),
            type=CH_PRIVATE_THREAD if private else CH_PUBLIC_THREAD,
            name=name,
            guild_id=parent_ch.guild_id,
            parent_id=parent_ch.id,
            owner_id=owner.id,
            archived=archived,
            locked=locked,
            auto_archive_duration=auto_archive_duration,
        )
        thread.member_ids.add(owner.id)
        if bot_joined:
            thread.member_ids.add(self.bot.id)
        self._register_channel(thread)
        if not archived:
            self._schedule_dispatch(
                "THREAD_CREATE", {**self._channel_payload(thread), "newly_created": True}, guild_id=thread.guild_id
            )
        return thread

    def add_dm_channel(self, user: FakeUser) -> FakeChannel:
        for ch in self.channels.values():
            if ch.type == CH_DM and ch.recipient_ids == [user.id]:
                return ch
        channel = FakeChannel(id=self._snowflake(), type=CH_DM, name=None, recipient_ids=[user.id])
        self._register_channel(channel)
        return channel

    def archive_thread(self, thread: Any, *, locked: bool = False) -> None:
        """A person archives (or locks) the thread now; dispatches THREAD_UPDATE."""
        t = self._channel(thread)
        t.archived, t.locked, t.archive_timestamp = True, locked or t.locked, self._wall()
        self._schedule_dispatch("THREAD_UPDATE", self._channel_payload(t), guild_id=t.guild_id)

    def delete_channel(self, channel: Any) -> None:
        """Delete a channel/thread out from under the bot (dispatches THREAD_DELETE / CHANNEL_DELETE)."""
        ch = self._channel(channel)
        self._delete_channel_state(ch)
        event, data = self._channel_delete_event(ch)
        self._schedule_dispatch(event, data, guild_id=ch.guild_id)

    def _register_channel(self, channel: FakeChannel) -> None:
        self.channels[channel.id] = channel
        self._channel_message_ids.setdefault(channel.id, [])
        if channel.guild_id is not None:
            self.guilds[channel.guild_id].channel_ids.append(channel.id)

    def _delete_channel_state(self, ch: FakeChannel) -> None:
        ch.deleted = True
        if ch.guild_id is not None:
            ids = self.guilds[ch.guild_id].channel_ids
            if ch.id in ids:
                ids.remove(ch.id)

    def _channel_delete_event(self, ch: FakeChannel) -> tuple[str, dict[str, Any]]:
        if ch.is_thread:
            return "THREAD_DELETE", {
                "id": str(ch.id),
                "guild_id": str(ch.guild_id),
                "parent_id": str(ch.parent_id),
                "type": ch.type,
            }
        return "CHANNEL_DELETE", self._channel_payload(ch)

    # ---------------------------------------------------------------------------------------------- lookups

    def _guild(self, guild: Any) -> FakeGuild:
        gid = _id_of(guild)
        if gid not in self.guilds:
            raise KeyError(f"unknown guild {gid}")
        return self.guilds[gid]

    def _channel(self, channel: Any) -> FakeChannel:
        cid = _id_of(channel)
        if cid not in self.channels:
            raise KeyError(f"unknown channel {cid}")
        return self.channels[cid]

    def get_channel(self, channel_id: Any) -> FakeChannel | None:
        return self.channels.get(_id_of(channel_id))

    def threads(self, parent: Any = None) -> list[FakeChannel]:
        """Threads known to the fake (optionally only those under ``parent``), creation order, not deleted."""
        pid = _id_of(parent) if parent is not None else None
        return [
            c for c in self.channels.values() if c.is_thread and not c.deleted and (pid is None or c.parent_id == pid)
        ]

    def _member(self, guild_id: int | None, user_id: int) -> FakeMember | None:
        if guild_id is None or guild_id not in self.guilds:
            return None
        return self.guilds[guild_id].members.get(user_id)

    def member_permissions(self, guild: Any, user: Any) -> int:
        """Guild-level permissions as Discord computes them (owner/admin => all; no channel overwrites)."""
        g = self._guild(guild)
        uid = _id_of(user)
        if uid == g.owner_id:
            return ALL_PERMISSIONS
        member = g.members.get(uid)
        value = g.everyone_role.permissions
        if member is not None:
            for rid in member.role_ids:
                if rid in g.roles:
                    value |= g.roles[rid].permissions
        if value & PERM_ADMIN:
            return ALL_PERMISSIONS
        return value

    def _bot_permissions(self, channel: FakeChannel) -> int:
        if channel.guild_id is None:
            return PERM_VIEW | PERM_SEND | _P(read_message_history=True, embed_links=True, attach_files=True).value
        return self.member_permissions(channel.guild_id, self.bot.id)

    def _require_bot_permission(self, channel: FakeChannel, needed: int) -> None:
        if channel.guild_id is not None and (self._bot_permissions(channel) & needed) != needed:
            raise _ApiError(403, 50013, "Missing Permissions")

    # ---------------------------------------------------------------------------------------------- payloads

    def _self_user_payload(self) -> dict[str, Any]:
        return {
            **self.bot.payload(),
            "verified": True,
            "mfa_enabled": False,
            "locale": "en-US",
            "flags": 0,
            "premium_type": 0,
            "email": None,
            "bio": "",
            "banner": None,
            "accent_color": None,
        }

    def _channel_payload(self, channel: FakeChannel) -> dict[str, Any]:
        return channel.payload(bot_id=self.bot.id, users=self.users)

    def _guild_join_payload(self, guild: FakeGuild, session: _GatewaySession | None) -> dict[str, Any]:
        # discord.py fires on_guild_join only when ``unavailable`` is absent (False means "became available").
        data = self._guild_create_payload(guild, session)
        del data["unavailable"]
        return data

    def _guild_create_payload(self, guild: FakeGuild, session: _GatewaySession | None) -> dict[str, Any]:
        intents = session.intents if session is not None else -1  # -1: every intent (for the dispatch log)
        channels = [self.channels[c] for c in guild.channel_ids if not self.channels[c].deleted]
        # Without GUILD_MEMBERS Discord sends only the bot's own member (and voice members).
        members = list(guild.members.values()) if intents & INTENT_GUILD_MEMBERS else [guild.members[self.bot.id]]
        return {
            **guild.payload(),
            "unavailable": False,
            "joined_at": _iso(guild.joined_at),
            "large": False,
            "member_count": len(guild.members),
            "channels": [self._channel_payload(c) for c in channels if not c.is_thread],
            "threads": [self._channel_payload(c) for c in channels if c.is_thread and not c.archived],
            "members": [m.payload() for m in members],
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    def _member_with_permissions(self, guild_id: int, user_id: int) -> dict[str, Any]:
        member = self.guilds[guild_id].members[user_id]
        return {**member.payload(), "permissions": str(self.member_permissions(guild_id, user_id))}

    def _partial_channel_for_interaction(self, channel: FakeChannel, user_id: int) -> dict[str, Any]:
        data = self._channel_payload(channel)
        if channel.guild_id is not None:
            data["permissions"] = str(self.member_permissions(channel.guild_id, user_id))
        return data

    # ---------------------------------------------------------------------------------------------- waiting

    def _notify(self) -> None:
        event, self._changed = self._changed, asyncio.Event()
        event.set()

    def _next_change(self) -> asyncio.Event:
        """The event the next change of recorded state sets (what ``eventually`` waits on)."""
        return self._changed

    def _describe_recent(self, since: float | None = None, limit: int = 15) -> str:
        reqs = [r for r in self.requests if since is None or r.at >= since][-limit:]
        lines = [f"    {r.method} {r.path} -> {r.status}{' (injected)' if r.injected else ''}" for r in reqs]
        text = "\n  recent requests:\n" + ("\n".join(lines) if lines else "    (none)")
        if self.unhandled_requests:
            text += f"\n  UNHANDLED routes: {self.unhandled_requests}"
        return text

    async def wait_ack(self, inter: FakeInteraction, timeout: float = 5.0) -> CallbackRecord:
        """The first callback for ``inter`` (whatever its status: check ``.status_code``/``.error_code``)."""
        await self._flush_background()
        return await eventually(
            lambda: inter.callbacks[0] if inter.callbacks else None,
            timeout=timeout,
            describe=lambda: f"{inter!r} got no interaction callback" + self._describe_recent(inter.dispatched_at),
            changed=self._next_change,
        )

    async def wait_followup(
        self,
        inter: FakeInteraction,
        timeout: float = 10.0,
        *,
        predicate: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """First message sent *after* the ack: a followup, or an edit of @original (e.g. after a defer).

        The type-4 initial reply does not count (use ``wait_reply`` for "whatever the user sees first").
        """
        kinds = ("followup", "original_edit", "followup_edit", "update")
        return await self._wait_response(inter, timeout, kinds, predicate)

    async def wait_reply(
        self,
        inter: FakeInteraction,
        timeout: float = 10.0,
        *,
        predicate: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """First message with real content for ``inter``: a type-4 reply, an @original edit or a followup."""
        kinds = ("initial", "followup", "original_edit", "followup_edit", "update")
        return await self._wait_response(inter, timeout, kinds, predicate)

    async def _wait_response(
        self,
        inter: FakeInteraction,
        timeout: float,
        kinds: tuple[str, ...],
        predicate: Callable[[dict[str, Any]], bool] | None,
    ) -> dict[str, Any]:
        await self._flush_background()

        def check() -> dict[str, Any] | None:
            for event in inter.responses:
                if event.kind in kinds and (predicate is None or predicate(event.message)):
                    return event.message
            return None

        def describe() -> str:
            seen = [(e.kind, e.message.get("content"), e.message.get("flags")) for e in inter.responses]
            cbs = [(c.type, c.status_code, c.error_code) for c in inter.callbacks]
            return (
                f"{inter!r}: no response of kind {kinds}; callbacks (type, status, code)={cbs}; "
                f"responses (kind, content, flags)={seen}" + self._describe_recent(inter.dispatched_at)
            )

        return await eventually(check, timeout=timeout, describe=describe, changed=self._next_change)

    async def wait_for_message(
        self,
        channel: Any,
        predicate: Callable[[dict[str, Any]], bool] | None = None,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """First public message in ``channel`` (current state, edits included) matching ``predicate``.

        Existing messages count too: pass a predicate (e.g. on author or content) to skip old ones.
        """
        await self._flush_background()
        cid = _id_of(channel)

        def check() -> dict[str, Any] | None:
            for msg in self.channel_messages(cid):
                if predicate is None or predicate(msg):
                    return msg
            return None

        def describe() -> str:
            seen = [(m["author"]["username"], m["content"][:80]) for m in self.channel_messages(cid)]
            return f"no matching message in channel {cid}; messages (author, content)={seen}" + self._describe_recent()

        return await eventually(check, timeout=timeout, describe=describe, changed=self._next_change)

    async def wait_for_request(self, method: str, path_regex: str, timeout: float = 5.0) -> RecordedRequest:
        """First recorded request matching (answered or not yet answered)."""
        pattern = re.compile(path_regex)

        def check() -> RecordedRequest | None:
            for r in self.requests:
                if (method == "*" or r.method == method.upper()) and pattern.search(r.path):
                    return r
            return None

        return await eventually(
            check,
            timeout=timeout,
            describe=lambda: f"no {method} {path_regex}" + self._describe_recent(),
            changed=self._next_change,
        )

    async def wait_for_dispatch(
        self, event: str, predicate: Callable[[dict[str, Any]], bool] | None = None, timeout: float = 5.0
    ) -> dict[str, Any]:
        """First gateway event ``event`` the fake dispatched (to any session) matching ``predicate``."""

        def check() -> dict[str, Any] | None:
            for name, data in self.dispatched:
                if name == event and (predicate is None or predicate(data)):
                    return data
            return None

        return await eventually(
            check,
            timeout=timeout,
            describe=lambda: f"no {event} dispatched; events: {[n for n, _ in self.dispatched][-20:]}",
            changed=self._next_change,
        )

    async def wait_for_sessions(self, count: int = 1, timeout: float = 5.0) -> None:
        """Until ``count`` gateway sessions are connected and identified."""
        await eventually(
            lambda: self.connected_sessions >= count,
            timeout=timeout,
            describe=lambda: f"{self.connected_sessions} connected gateway sessions, wanted {count}",
            changed=self._next_change,
        )

    # ---------------------------------------------------------------------------------------------- inspection

    def channel_messages(self, channel: Any) -> list[dict[str, Any]]:
        """Public, non-deleted messages of a channel/thread in creation order (no ephemeral replies)."""
        cid = _id_of(channel)
        return [
            self._messages[mid] for mid in self._channel_message_ids.get(cid, []) if not self._message_meta[mid].deleted
        ]

    def get_message(self, message_id: Any) -> dict[str, Any] | None:
        return self._messages.get(_id_of(message_id))

    def message_meta(self, message: Any) -> MessageMeta:
        return self._message_meta[_id_of(message)]

    def message_files(self, message: Any) -> list[tuple[str, bytes]]:
        """``(filename, bytes)`` of every file uploaded with the message."""
        return list(self._message_meta[_id_of(message)].files)

    def interaction_messages(self, inter: FakeInteraction) -> list[dict[str, Any]]:
        """Current state of every message sent for ``inter`` (original first, then followups), with flags."""
        return [self._messages[mid] for mid in inter.message_ids if not self._message_meta[mid].deleted]

    def synced_commands(self, guild: Any = None) -> list[dict[str, Any]]:
        if guild is None:
            return copy.deepcopy(self._global_commands)
        return copy.deepcopy(self._guild_commands.get(_id_of(guild), []))

    def requests_matching(self, method: str, path_regex: str) -> list[RecordedRequest]:
        pattern = re.compile(path_regex)
        return [r for r in self.requests if (method == "*" or r.method == method.upper()) and pattern.search(r.path)]

    # ---------------------------------------------------------------------------------------------- failures

    def inject_failure(
        self,
        method: str,
        path_regex: str,
        status: int,
        times: int = 1,
        *,
        after_commit: bool = False,
        code: int = 0,
        message: str | None = None,
        retry_after: float = 0.1,
        is_global: bool = False,
    ) -> FailureRule:
        """The next ``times`` requests matching ``method`` ("*" = any) and ``path_regex`` (``re.search`` on the
        path after ``/api/v10``, no query string) answer ``status``.

        ``after_commit=True``: the request is processed normally first (message created and dispatched), then
        the error replaces the success body ("Discord did it but the answer was lost"). ``status=0``: no answer at
        all, the connection drops (with ``after_commit``, after doing it).
        """
        rule = FailureRule(
            method=method.upper(),
            pattern=re.compile(path_regex),
            status=status,
            remaining=times,
            after_commit=after_commit,
            code=code,
            message=message or _DEFAULT_ERROR_MESSAGES.get(status, str(status)),
            retry_after=retry_after,
            is_global=is_global,
        )
        self._failures.append(rule)
        return rule

    def clear_failures(self) -> None:
        self._failures.clear()

    def _take_failure(self, method: str, path: str) -> FailureRule | None:
        for rule in self._failures:
            if rule.remaining > 0 and rule.method in ("*", method) and rule.pattern.search(path):
                rule.remaining -= 1
                rule.hits += 1
                return rule
        return None

    @staticmethod
    def _failure_response(rule: FailureRule) -> web.Response:
        if rule.status == 429:
            body = {
                "message": rule.message,
                "retry_after": rule.retry_after,
                "global": rule.is_global,
                "code": rule.code,
            }
            headers = {
                # Without Via discord.py assumes a Cloudflare ban and raises instead of waiting.
                "Via": "1.1 google",
                "Retry-After": str(max(1, math.ceil(rule.retry_after))),
                "X-RateLimit-Limit": "5",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": f"{time.time() + rule.retry_after:.3f}",
                "X-RateLimit-Reset-After": f"{rule.retry_after:.3f}",
                "X-RateLimit-Bucket": "fake-bucket",
                "X-RateLimit-Scope": "global" if rule.is_global else "user",
            }
            if rule.is_global:
                headers["X-RateLimit-Global"] = "true"
            return _json_response(body, status=429, headers=headers)
        return _json_response({"code": rule.code, "message": rule.message}, status=rule.status)

    # ---------------------------------------------------------------------------------------------- gateway

    def _session_sees_guild(self, session: _GatewaySession, guild_id: int | None) -> bool:
        if guild_id is None or session.shard is None:
            return True
        shard_id, shard_count = session.shard
        return (guild_id >> 22) % shard_count == shard_id

    def _filter_for_session(
        self, session: _GatewaySession, event: str, data: dict[str, Any], intent: int | None
    ) -> dict[str, Any] | None:
        if intent is not None and not session.intents & intent:
            return None
        if event in ("MESSAGE_CREATE", "MESSAGE_UPDATE"):
            is_dm = "guild_id" not in data
            if not session.intents & (INTENT_DIRECT_MESSAGES if is_dm else INTENT_GUILD_MESSAGES):
                return None
            if not session.intents & INTENT_MESSAGE_CONTENT and not is_dm:
                author_is_bot = data.get("author", {}).get("id") == str(self.bot.id)
                mentions_bot = any(m.get("id") == str(self.bot.id) for m in data.get("mentions", []))
                if not (author_is_bot or mentions_bot):
                    # What Discord does without the MESSAGE_CONTENT privileged intent.
                    data = {**data, "content": "", "embeds": [], "attachments": [], "components": []}
        return data

    async def dispatch(
        self,
        event: str,
        data: dict[str, Any] | None,
        *,
        guild_id: int | None = None,
        intent: int | None = None,
        per_session: Callable[[Any, _GatewaySession], dict[str, Any]] | None = None,
    ) -> int:
        """Send a DISPATCH to every identified session. Returns how many live connections received it."""
        delivered = 0
        for session in list(self._sessions.values()):
            if not self._session_sees_guild(session, guild_id):
                continue
            payload = per_session(self.guilds[guild_id], session) if per_session is not None else data
            assert payload is not None
            filtered = self._filter_for_session(session, event, payload, intent)
            if filtered is None:
                continue
            if await session.send_dispatch(event, filtered):
                delivered += 1
        record = data if data is not None else (per_session(self.guilds[guild_id], None) if per_session else {})
        self.dispatched.append((event, record))
        self._notify()
        return delivered

    def _schedule_dispatch(
        self,
        event: str,
        data: dict[str, Any] | None,
        *,
        guild_id: int | None = None,
        intent: int | None = None,
        per_session: Callable[[Any, _GatewaySession | None], dict[str, Any]] | None = None,
    ) -> None:
        """Dispatch from sync setup helpers, only when a bot is connected (otherwise GUILD_CREATE covers it)."""
        if not self._sessions:
            return
        loop = asyncio.get_running_loop()
        task = loop.create_task(self.dispatch(event, data, guild_id=guild_id, intent=intent, per_session=per_session))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _flush_background(self) -> None:
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def reconnect_clients(self) -> None:
        """Send op 7 RECONNECT to every connection; discord.py reconnects at once and RESUMEs."""
        for session in list(self._sessions.values()):
            if session.connected:
                await session._send_raw(json.dumps({"op": 7, "d": None}))

    async def drop_gateway_connections(self, code: int = 4000) -> None:
        """Close every gateway websocket with ``code`` (4000: discord.py reconnects and RESUMEs)."""
        for session in list(self._sessions.values()):
            if session.connected and session.ws is not None:
                await session.ws.close(code=code)

    async def _ws_handler(self, request: web.Request) -> web.StreamResponse:
        # timeout: how long close() waits for the client's close frame (a killed bot never sends one)
        ws = web.WebSocketResponse(autoping=True, max_msg_size=16 * 1024 * 1024, timeout=1.0)
        await ws.prepare(request)
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": self.heartbeat_interval_ms}}))
        session: _GatewaySession | None = None
        client_close_code: int | None = None
        try:
            while True:
                msg = await ws.receive()
                if msg.type == aiohttp.WSMsgType.CLOSE:
                    client_close_code = msg.data  # only set when the client started the close
                    break
                if msg.type in (aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    break
                if msg.type != aiohttp.WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                op, d = frame.get("op"), frame.get("d")
                if op == 1:
                    await self._ws_send(ws, session, {"op": 11})
                elif op == 2:
                    session = await self._handle_identify(ws, d)
                    if session is None:
                        break
                elif op == 6:
                    session = await self._handle_resume(ws, d)
                    if session is None:
                        break
                elif op == 8 and session is not None:
                    await self._handle_request_members(session, d)
                # op 3 (presence), op 4 (voice) and others are accepted and ignored
        finally:
            if not ws.closed:
                await ws.close()
            if session is not None and session.ws is ws:
                session.ws = None
                # A clean close by the client (1000/1001) ends the session, like Discord; anything else
                # (our own 4000, a dropped TCP connection, a RECONNECT) leaves it resumable.
                if client_close_code in (1000, 1001):
                    self._sessions.pop(session.id, None)
            self._notify()
        return ws

    async def _ws_send(
        self, ws: web.WebSocketResponse, session: _GatewaySession | None, payload: dict[str, Any]
    ) -> None:
        if session is not None:
            async with session.lock:
                await ws.send_str(json.dumps(payload))
        else:
            await ws.send_str(json.dumps(payload))

    async def _handle_identify(self, ws: web.WebSocketResponse, d: dict[str, Any]) -> _GatewaySession | None:
        self.identify_payloads.append(copy.deepcopy(d))
        if d.get("token") != self.bot_token:
            await ws.close(code=4004, message=b"Authentication failed.")
            return None
        intents = int(d.get("intents", 0))
        allowed = self.allowed_privileged_intents
        if allowed is not None and intents & PRIVILEGED_INTENTS & ~allowed:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return None
        shard = tuple(d["shard"]) if d.get("shard") else None
        session = _GatewaySession(secrets.token_hex(16), intents, shard)  # type: ignore[arg-type]
        session.ws = ws
        self._sessions[session.id] = session
        visible = [g for g in self.guilds.values() if self._session_sees_guild(session, g.id)]
        ready: dict[str, Any] = {
            "v": 10,
            "user": self._self_user_payload(),
            "guilds": [{"id": str(g.id), "unavailable": True} for g in visible],
            "session_id": session.id,
            # discord.py reconnects/resumes here, so it must be the loopback URL
            "resume_gateway_url": self.gateway_url,
            "application": {"id": str(self.application_id), "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "user_settings": {},
            "session_type": "normal",
            "auth": {},
            "_trace": ["fake-discord"],
        }
        if shard is not None:
            ready["shard"] = list(shard)
        await session.send_dispatch("READY", ready)
        for guild in visible:
            await session.send_dispatch("GUILD_CREATE", self._guild_create_payload(guild, session))
        self._notify()
        return session

    async def _handle_resume(self, ws: web.WebSocketResponse, d: dict[str, Any]) -> _GatewaySession | None:
        session = self._sessions.get(d.get("session_id", ""))
        if session is None or d.get("token") != self.bot_token:
            await ws.send_str(json.dumps({"op": 9, "d": False}))  # invalid session, not resumable
            return None
        old = session.ws
        session.ws = ws
        if old is not None and old is not ws and not old.closed:
            await old.close(code=4000)
        seq = d.get("seq") or 0
        async with session.lock:
            for s, frame in list(session.buffer):
                if s > seq:
                    await ws.send_str(frame)
        await session.send_dispatch("RESUMED", {"_trace": ["fake-discord"]})
        self._notify()
        return session

    async def _handle_request_members(self, session: _GatewaySession, d: dict[str, Any]) -> None:
        guild = self.guilds.get(int(d["guild_id"]))
        if guild is None:
            return
        members = list(guild.members.values())
        if d.get("user_ids"):
            wanted = {int(u) for u in d["user_ids"]}
            members = [m for m in members if m.id in wanted]
        elif d.get("query"):
            members = [m for m in members if m.user.name.lower().startswith(d["query"].lower())]
        if d.get("limit"):
            members = members[: int(d["limit"])]
        chunk: dict[str, Any] = {
            "guild_id": str(guild.id),
            "members": [m.payload() for m in members],
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": [],
        }
        if d.get("nonce"):
            chunk["nonce"] = d["nonce"]
        await session.send_dispatch("GUILD_MEMBERS_CHUNK", chunk)

    # ---------------------------------------------------------------------------------------------- messages core

    def _gateway_message(self, msg: dict[str, Any]) -> dict[str, Any]:
        """REST message payload + the gateway-only ``member`` fields for guild messages."""
        data = copy.deepcopy(msg)
        guild_id = int(msg["guild_id"]) if msg.get("guild_id") else None
        if guild_id is not None:
            member = self._member(guild_id, int(msg["author"]["id"]))  # None for channel-webhook authors
            if member is not None:
                data["member"] = member.payload(with_user=False)
            for mention in data.get("mentions", []):
                m = self._member(guild_id, int(mention["id"]))
                if m is not None:
                    mention["member"] = m.payload(with_user=False)
        return data

    def _resolve_mentions(
        self,
        content: str,
        allowed: dict[str, Any] | None,
        guild_id: int | None,
        *,
        replied_author: dict[str, Any] | None = None,
        extra_user_ids: Iterable[int] = (),
    ) -> tuple[bool, list[dict[str, Any]], list[str]]:
        """(mention_everyone, mentions, mention_roles) after applying allowed_mentions, as Discord renders them."""
        parse = {"users", "roles", "everyone"} if allowed is None else set(allowed.get("parse", []))
        allowed_users = {int(u) for u in (allowed or {}).get("users", [])}
        allowed_roles = {int(r) for r in (allowed or {}).get("roles", [])}
        everyone = ("@everyone" in content or "@here" in content) and "everyone" in parse
        user_ids: list[int] = []
        for uid in [int(x) for x in re.findall(r"<@!?(\d+)>", content)] + list(extra_user_ids):
            if ("users" in parse or uid in allowed_users) and uid in self.users and uid not in user_ids:
                user_ids.append(uid)
        if replied_author is not None:
            rid = int(replied_author["id"])
            replied_ok = allowed is None or bool(allowed.get("replied_user", False))
            if replied_ok and rid not in user_ids and rid in self.users:
                user_ids.append(rid)
        role_ids: list[str] = []
        if guild_id is not None:
            for rid in (int(x) for x in re.findall(r"<@&(\d+)>", content)):
                if ("roles" in parse or rid in allowed_roles) and rid in self.guilds[guild_id].roles:
                    role_ids.append(str(rid))
        return everyone, [self.users[u].payload() for u in user_ids], role_ids

    def _validate_message_body(self, body: dict[str, Any], files: _FileParts) -> None:
        content = body.get("content") or ""
        if len(content) > 2000:
            raise _form_error("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
        if len(body.get("embeds") or []) > 10:
            raise _form_error("embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.")
        if len(files) > MAX_ATTACHMENTS:
            raise _form_error("attachments", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_ATTACHMENTS} or fewer in length.")
        if any(len(blob) > ATTACHMENT_SIZE_LIMIT for _, _, blob, _ in files):
            raise _ApiError(413, 40005, "Request entity too large")
        if not (
            content
            or body.get("embeds")
            or files
            or body.get("components")
            or body.get("sticker_ids")
            or body.get("poll")
        ):
            raise _ApiError(400, 50006, "Cannot send an empty message")

    def _build_attachments(
        self, channel_id: int, body: dict[str, Any], files: _FileParts, keep: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[tuple[str, bytes]]]:
        """New attachment payloads for uploaded ``files`` (``files[N]`` fields) plus kept existing ones."""
        declared = {str(a.get("id")): a for a in body.get("attachments") or [] if isinstance(a, dict)}
        result = list(keep)
        uploaded: list[tuple[str, bytes]] = []
        for field_name, filename, blob, content_type in files:
            index = field_name[len("files[") : -1] if field_name.startswith("files[") else field_name
            meta = declared.get(index, {})
            filename = meta.get("filename") or filename
            attachment_id = self._snowflake()
            self._attachment_blobs[attachment_id] = blob
            url = f"{self.base_url}/attachments/{channel_id}/{attachment_id}/{filename}"
            result.append(
                {
                    "id": str(attachment_id),
                    "filename": filename,
                    "description": meta.get("description"),
                    "content_type": mimetypes.guess_type(filename)[0] or content_type or "application/octet-stream",
                    "size": len(blob),
                    "url": url,
                    "proxy_url": url,
                    "flags": 0,
                }
            )
            uploaded.append((filename, blob))
        return result, uploaded

    def _new_message(
        self,
        channel: FakeChannel,
        *,
        author: FakeUser,
        body: dict[str, Any],
        files: _FileParts | None = None,
        source: str,
        public: bool = True,
        msg_type: int | None = None,
        flags: int = 0,
        webhook: FakeWebhook | None = None,
        username: str | None = None,
        inter: FakeInteraction | None = None,
        mention_user_ids: Iterable[int] = (),
    ) -> dict[str, Any]:
        """Create and store a message (not dispatched). Raises _ApiError for what Discord rejects."""
        files = list(files or [])
        if not flags & FLAG_LOADING:
            self._validate_message_body(body, files)
        mid = self._snowflake()
        content = body.get("content") or ""
        reference = body.get("message_reference")
        referenced = None
        if reference and reference.get("message_id"):
            referenced = self._messages.get(int(reference["message_id"]))
            if referenced is None and reference.get("fail_if_not_exists", True):
                raise _form_error("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
        allowed = body.get("allowed_mentions")
        everyone, mentions, mention_roles = self._resolve_mentions(
            content,
            allowed,
            channel.guild_id,
            replied_author=referenced["author"] if referenced else None,
            extra_user_ids=mention_user_ids,
        )
        attachments, uploaded = self._build_attachments(channel.id, body, files, [])
        if webhook is not None:
            author_payload = {
                "id": str(webhook.id),
                "username": username or webhook.name,
                "discriminator": "0000",
                "global_name": None,
                "avatar": None,
                "bot": True,
                "public_flags": 0,
            }
        else:
            author_payload = author.payload()
        if msg_type is None:
            msg_type = 19 if referenced is not None else 0
        msg: dict[str, Any] = {
            "id": str(mid),
            "type": msg_type,
            "channel_id": str(channel.id),
            "author": author_payload,
            "content": content,
            "timestamp": _iso(self._wall()),
            "edited_timestamp": None,
            "tts": bool(body.get("tts", False)),
            "mention_everyone": everyone,
            "mentions": mentions,
            "mention_roles": mention_roles,
            "attachments": attachments,
            "embeds": body.get("embeds") or [],
            "reactions": [],
            "pinned": False,
            "flags": flags | (int(body.get("flags") or 0) & ~FLAG_LOADING),
            "components": body.get("components") or [],
        }
        if channel.guild_id is not None:
            msg["guild_id"] = str(channel.guild_id)
        if body.get("nonce") is not None:
            msg["nonce"] = body["nonce"]
        if reference:
            msg["message_reference"] = {
                "type": reference.get("type", 0),
                "message_id": str(reference["message_id"]),
                "channel_id": str(reference.get("channel_id") or channel.id),
                **({"guild_id": str(channel.guild_id)} if channel.guild_id else {}),
            }
            msg["referenced_message"] = copy.deepcopy(referenced)
        if webhook is not None:
            msg["webhook_id"] = str(webhook.id)
            msg["application_id"] = str(webhook.application_id)  # application-owned webhooks say whose they are
        if inter is not None:
            # Interaction replies come from the application's webhook.
            msg["webhook_id"] = str(self.application_id)
            msg["application_id"] = str(self.application_id)
            msg["interaction_metadata"] = {
                "id": str(inter.id),
                "type": inter.type,
                "user": self.users[inter.user_id].payload(),
                "authorizing_integration_owners": inter.payload.get("authorizing_integration_owners", {}),
                **({"name": inter.command_name, "command_type": 1} if inter.type == 2 else {}),
            }
        self._messages[mid] = msg
        self._message_meta[mid] = MessageMeta(
            id=mid,
            channel_id=channel.id,
            author_id=webhook.id if webhook else author.id,
            source=source,
            created_at=self.now(),
            public=public,
            nonce=body.get("nonce"),
            allowed_mentions=copy.deepcopy(allowed),
            files=uploaded,
            interaction_id=inter.id if inter else None,
            webhook_id=webhook.id if webhook else None,
            username=username,
            avatar_url=body.get("avatar_url"),
        )
        self.allowed_mentions_log.append(
            {
                "message_id": mid,
                "channel_id": channel.id,
                "source": source,
                "allowed_mentions": copy.deepcopy(allowed),
            }
        )
        if public:
            self._channel_message_ids.setdefault(channel.id, []).append(mid)
            channel.last_message_id = mid
            if channel.is_thread:
                channel.message_count += 1
                channel.total_message_sent += 1
        if inter is not None:
            inter.message_ids.append(mid)
        self._notify()
        return msg

    def _edit_message(self, msg: dict[str, Any], body: dict[str, Any], files: _FileParts) -> None:
        mid = int(msg["id"])
        meta = self._message_meta[mid]
        if "content" in body:
            content = body["content"] or ""
            if len(content) > 2000:
                raise _form_error("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
            msg["content"] = content
        if "embeds" in body:
            msg["embeds"] = body["embeds"] or []
        if "components" in body:
            msg["components"] = body["components"] or []
        if "flags" in body and body["flags"] is not None:
            # only SUPPRESS_EMBEDS is editable; ephemeral stays as it was
            msg["flags"] = (msg["flags"] & ~(1 << 2)) | (int(body["flags"]) & (1 << 2))
        msg["flags"] &= ~FLAG_LOADING
        if "attachments" in body or files:
            existing = {a["id"]: a for a in msg["attachments"]}
            keep = [existing[str(a["id"])] for a in body.get("attachments") or [] if str(a.get("id")) in existing]
            if "attachments" not in body:
                keep = list(msg["attachments"])
            msg["attachments"], uploaded = self._build_attachments(meta.channel_id, body, files, keep)
            meta.files.extend(uploaded)
        allowed = body.get("allowed_mentions", meta.allowed_mentions)
        if "allowed_mentions" in body:
            meta.allowed_mentions = copy.deepcopy(allowed)
        channel = self.channels[meta.channel_id]
        msg["mention_everyone"], msg["mentions"], msg["mention_roles"] = self._resolve_mentions(
            msg["content"], allowed, channel.guild_id
        )
        msg["edited_timestamp"] = _iso(self._wall())
        meta.edits += 1
        meta.edited_at.append(self.now())
        self.allowed_mentions_log.append(
            {
                "message_id": mid,
                "channel_id": meta.channel_id,
                "source": f"{meta.source}-edit",
                "allowed_mentions": copy.deepcopy(allowed),
            }
        )
        self._notify()

    async def _publish(self, event: str, msg: dict[str, Any]) -> None:
        if self._message_meta[int(msg["id"])].public:
            guild_id = int(msg["guild_id"]) if msg.get("guild_id") else None
            await self.dispatch(event, self._gateway_message(msg), guild_id=guild_id)

    async def _delete_message(self, msg: dict[str, Any]) -> None:
        meta = self._message_meta[int(msg["id"])]
        meta.deleted = True
        self._notify()
        if meta.public:
            data = {"id": msg["id"], "channel_id": msg["channel_id"]}
            if msg.get("guild_id"):
                data["guild_id"] = msg["guild_id"]
            await self.dispatch("MESSAGE_DELETE", data, guild_id=int(msg["guild_id"]) if msg.get("guild_id") else None)

    async def _prepare_channel_for_message(self, channel: FakeChannel) -> None:
        """Threads: locked+archived rejects messages; archived-but-unlocked is unarchived by the new message."""
        if channel.deleted:
            raise _ApiError(404, 10003, "Unknown Channel")
        if channel.is_thread and channel.archived:
            if channel.locked:
                raise _ApiError(400, 50083, "Thread is archived")
            channel.archived = False
            channel.archive_timestamp = self._wall()
            await self.dispatch("THREAD_UPDATE", self._channel_payload(channel), guild_id=channel.guild_id)

    def _find_by_nonce(self, channel_id: int, author_id: int, nonce: Any) -> dict[str, Any] | None:
        cutoff = self.now() - self.nonce_window
        for mid in reversed(self._channel_message_ids.get(channel_id, [])):
            meta = self._message_meta[mid]
            if meta.created_at < cutoff:
                break
            same_nonce = meta.nonce is not None and str(meta.nonce) == str(nonce)
            if meta.author_id == author_id and same_nonce and not meta.deleted:
                return self._messages[mid]
        return None

    # ---------------------------------------------------------------------------------------------- user actions

    async def send_user_message(
        self,
        user: FakeUser,
        channel: Any,
        content: str = "",
        *,
        mention_bot: bool = False,
        reply_to: Any = None,
        files: Iterable[tuple[str, bytes]] = (),
        embeds: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A user posts in ``channel`` (text, thread or DM): stored and dispatched as MESSAGE_CREATE.

        ``mentions`` is filled from ``<@id>`` in ``content``; ``mention_bot=True`` adds the bot even if the
        content does not contain its mention.
        """
        await self._flush_background()
        ch = self._channel(channel)
        body: dict[str, Any] = {"content": content, "embeds": embeds or [], "nonce": str(self._snowflake())}
        if reply_to is not None:
            body["message_reference"] = {"message_id": str(_id_of(reply_to)), "channel_id": str(ch.id)}
        file_parts = [(f"files[{i}]", name, blob, "") for i, (name, blob) in enumerate(files)]
        await self._prepare_channel_for_message(ch)
        msg = self._new_message(
            ch,
            author=user,
            body=body,
            files=file_parts,
            source="user",
            mention_user_ids=[self.bot.id] if mention_bot else [],
        )
        await self._publish("MESSAGE_CREATE", msg)
        return msg

    async def edit_user_message(self, message: Any, content: str) -> dict[str, Any]:
        msg = self._messages[_id_of(message)]
        self._edit_message(msg, {"content": content}, [])
        await self._publish("MESSAGE_UPDATE", msg)
        return msg

    # ---------------------------------------------------------------------------------------------- interactions

    def _find_command(self, guild_id: int | None, root: str) -> tuple[dict[str, Any], int | None]:
        if guild_id is not None:
            for cmd in self._guild_commands.get(guild_id, []):
                if cmd["name"] == root and cmd.get("type", 1) == 1:
                    return cmd, guild_id
        for cmd in self._global_commands:
            if cmd["name"] == root and cmd.get("type", 1) == 1:
                return cmd, None
        guild_names = [c["name"] for c in self._guild_commands.get(guild_id or 0, [])]
        global_names = [c["name"] for c in self._global_commands]
        raise LookupError(
            f"/{root} was not synced by the bot (guild {guild_id} commands: {guild_names}; "
            f"global commands: {global_names}). Did the bot call tree.sync()?"
        )

    def _convert_option(
        self,
        schema: dict[str, Any],
        value: Any,
        guild_id: int | None,
        resolved: dict[str, dict[str, Any]],
        focused: bool,
    ) -> Any:
        opt_type = schema["type"]
        name = schema["name"]
        if focused:
            return str(value)  # autocomplete sends what the user has typed so far
        if opt_type == 3:
            value = str(value)
        elif opt_type == 4:
            value = int(value)
        elif opt_type == 5:
            value = bool(value)
        elif opt_type == 10:
            value = float(value)
        elif opt_type in (6, 9) and (isinstance(value, (FakeUser, FakeMember)) or _id_of(value) in self.users):
            uid = _id_of(value)
            resolved.setdefault("users", {})[str(uid)] = self.users[uid].payload()
            member = self._member(guild_id, uid)
            if member is not None:
                m = member.payload(with_user=False)
                m["permissions"] = str(self.member_permissions(guild_id, uid))
                resolved.setdefault("members", {})[str(uid)] = m
            return str(uid)
        elif opt_type == 7:
            ch = self._channel(value)
            data = self._channel_payload(ch)
            if ch.guild_id is not None:
                data["permissions"] = str(self.member_permissions(ch.guild_id, self.bot.id))
            resolved.setdefault("channels", {})[str(ch.id)] = data
            allowed_types = schema.get("channel_types")
            if allowed_types and ch.type not in allowed_types:
                raise ValueError(f"option {name!r} accepts channel types {allowed_types}, got {ch.type}")
            return str(ch.id)
        elif opt_type in (8, 9):
            rid = _id_of(value)
            role = self.guilds[guild_id].roles[rid] if guild_id else None
            if role is None:
                raise ValueError(f"option {name!r}: unknown role {rid}")
            resolved.setdefault("roles", {})[str(rid)] = role.payload()
            return str(rid)
        elif opt_type == 11:
            filename, blob = value
            attachment_id = self._snowflake()
            self._attachment_blobs[attachment_id] = blob
            url = f"{self.base_url}/attachments/0/{attachment_id}/{filename}"
            resolved.setdefault("attachments", {})[str(attachment_id)] = {
                "id": str(attachment_id),
                "filename": filename,
                "size": len(blob),
                "url": url,
                "proxy_url": url,
                "content_type": mimetypes.guess_type(filename)[0] or "application/octet-stream",
            }
            return str(attachment_id)
        else:
            raise ValueError(f"option {name!r}: unsupported option type {opt_type} for value {value!r}")
        choices = schema.get("choices")
        if choices and value not in [c["value"] for c in choices]:
            raise ValueError(f"option {name!r}: {value!r} is not one of the choices {[c['value'] for c in choices]}")
        for bound, check in (("min_value", lambda v, b: v >= b), ("max_value", lambda v, b: v <= b)):
            if schema.get(bound) is not None and opt_type in (4, 10) and not check(value, schema[bound]):
                raise ValueError(f"option {name!r}: {value!r} violates {bound}={schema[bound]}")
        for bound, check in (("min_length", lambda v, b: len(v) >= b), ("max_length", lambda v, b: len(v) <= b)):
            if schema.get(bound) is not None and opt_type == 3 and not check(value, schema[bound]):
                raise ValueError(f"option {name!r}: {value!r} violates {bound}={schema[bound]}")
        return value

    def _build_command_data(
        self, command: str, guild_id: int | None, options: dict[str, Any], focused: str | None = None
    ) -> tuple[dict[str, Any], str]:
        parts = command.strip().lstrip("/").split()
        if not parts:
            raise ValueError("empty command name")
        cmd, cmd_guild = self._find_command(guild_id, parts[0])
        schema_options: list[dict[str, Any]] = cmd.get("options") or []
        data: dict[str, Any] = {"id": cmd["id"], "name": cmd["name"], "type": 1}
        if cmd_guild is not None:
            data["guild_id"] = str(cmd_guild)
        container: dict[str, Any] = data
        path = [parts[0]]
        for part in parts[1:]:
            sub = next((o for o in schema_options if o["name"] == part and o["type"] in (1, 2)), None)
            if sub is None:
                names = [o["name"] for o in schema_options if o["type"] in (1, 2)]
                raise LookupError(f"/{' '.join(path)} has no subcommand {part!r} (has: {names})")
            node: dict[str, Any] = {"name": part, "type": sub["type"], "options": []}
            container.setdefault("options", []).append(node)
            container = node
            schema_options = sub.get("options") or []
            path.append(part)
        if any(o["type"] in (1, 2) for o in schema_options):
            names = [o["name"] for o in schema_options if o["type"] in (1, 2)]
            raise LookupError(f"/{' '.join(path)} is a group: pick one of {names}")
        resolved: dict[str, dict[str, Any]] = {}
        leaf: list[dict[str, Any]] = []
        by_name = {o["name"]: o for o in schema_options}
        for name, value in options.items():
            schema = by_name.get(name)
            if schema is None:
                raise LookupError(f"/{' '.join(path)} has no option {name!r} (has: {list(by_name)})")
            is_focused = name == focused
            opt: dict[str, Any] = {
                "name": name,
                "type": schema["type"],
                "value": self._convert_option(schema, value, guild_id, resolved, is_focused),
            }
            if is_focused:
                opt["focused"] = True
            leaf.append(opt)
        if focused is None:
            missing = [o["name"] for o in schema_options if o.get("required") and o["name"] not in options]
            if missing:
                raise ValueError(f"/{' '.join(path)}: missing required options {missing}")
        elif focused not in by_name:
            raise LookupError(f"/{' '.join(path)} has no option {focused!r} to focus (has: {list(by_name)})")
        if leaf or container is not data:
            container["options"] = leaf
        if resolved:
            data["resolved"] = resolved
        return data, " ".join(path)

    def _interaction_payload(
        self,
        itype: int,
        user: FakeUser,
        channel: FakeChannel,
        data: dict[str, Any],
        *,
        locale: str,
        message: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], int, str]:
        iid = self._snowflake()
        token = f"aW50ZXJhY3Rpb246{iid}:{secrets.token_urlsafe(32)}"
        payload: dict[str, Any] = {
            "id": str(iid),
            "application_id": str(self.application_id),
            "type": itype,
            "data": data,
            "channel": self._partial_channel_for_interaction(channel, user.id),
            "channel_id": str(channel.id),
            "token": token,
            "version": 1,
            "locale": locale,
            "entitlements": [],
            "attachment_size_limit": ATTACHMENT_SIZE_LIMIT,
            "app_permissions": str(self._bot_permissions(channel)),
        }
        if channel.guild_id is not None:
            guild = self.guilds[channel.guild_id]
            if user.id not in guild.members:
                raise LookupError(f"{user.name} is not a member of guild {guild.name!r}: call fake.add_member first")
            payload.update(
                guild_id=str(guild.id),
                guild={"id": str(guild.id), "locale": guild.locale, "features": []},
                guild_locale=guild.locale,
                member=self._member_with_permissions(guild.id, user.id),
                authorizing_integration_owners={"0": str(guild.id)},
                context=0,
            )
        else:
            payload.update(user=user.payload(), authorizing_integration_owners={"1": str(user.id)}, context=1)
        if message is not None:
            payload["message"] = copy.deepcopy(message)
        return payload, iid, token

    async def _dispatch_interaction(self, inter: FakeInteraction) -> FakeInteraction:
        await self._flush_background()
        self.interactions[inter.id] = inter
        self._interactions_by_token[inter.token] = inter
        # Set before sending: the bot may answer while dispatch() is still awaiting other sessions.
        inter.dispatched_at = self.now()
        guild_id = inter.payload.get("guild_id")  # like Discord: only the guild's shard receives it
        delivered = await self.dispatch(
            "INTERACTION_CREATE", inter.payload, guild_id=int(guild_id) if guild_id else None
        )
        if delivered == 0:
            raise RuntimeError(f"{inter!r}: no bot is connected to the fake gateway to receive it")
        return inter

    async def slash(
        self,
        user: FakeUser,
        channel: Any,
        command: str,
        /,
        *,
        guild: Any = None,
        locale: str = "en-US",
        **options: Any,
    ) -> FakeInteraction:
        """Run ``/command`` ("group sub" for subcommands) as ``user`` in ``channel``; kwargs are option values.

        The command and option types come from what the bot synced (guild commands first, then global).
        USER/CHANNEL/ROLE options take Fake* objects or ids; ATTACHMENT takes ``(filename, bytes)``.
        ``guild`` is implied by ``channel`` and only checked.
        """
        ch = self._channel(channel)
        if guild is not None and _id_of(guild) != ch.guild_id:
            raise ValueError(f"channel {ch.id} is not in guild {_id_of(guild)}")
        data, path = self._build_command_data(command, ch.guild_id, options)
        payload, iid, token = self._interaction_payload(2, user, ch, data, locale=locale)
        inter = FakeInteraction(
            id=iid,
            token=token,
            type=2,
            payload=payload,
            user_id=user.id,
            channel_id=ch.id,
            guild_id=ch.guild_id,
            command_name=path,
        )
        return await self._dispatch_interaction(inter)

    async def autocomplete(
        self,
        user: FakeUser,
        channel: Any,
        command: str,
        /,
        *,
        focused: str,
        timeout: float = 5.0,
        locale: str = "en-US",
        **options: Any,
    ) -> list[dict[str, Any]]:
        """Type-4 interaction with ``focused`` option (value: ``options[focused]`` or ""); returns the choices."""
        ch = self._channel(channel)
        options.setdefault(focused, "")
        data, path = self._build_command_data(command, ch.guild_id, options, focused=focused)
        payload, iid, token = self._interaction_payload(4, user, ch, data, locale=locale)
        inter = FakeInteraction(
            id=iid,
            token=token,
            type=4,
            payload=payload,
            user_id=user.id,
            channel_id=ch.id,
            guild_id=ch.guild_id,
            command_name=path,
        )
        await self._dispatch_interaction(inter)
        ack = await self.wait_ack(inter, timeout)
        if ack.status_code != 200 or ack.type != 8:
            raise AssertionError(f"autocomplete for /{path} answered {ack}")
        return list(ack.data.get("choices", []))

    async def click_button(
        self,
        user: FakeUser,
        message: Any,
        custom_id: str,
        /,
        *,
        component_type: int = 2,
        values: list[str] | None = None,
        locale: str = "en-US",
        elsewhere: Any = None,
    ) -> FakeInteraction:
        """Type-3 component interaction on ``message`` (button by default; pass ``values`` for selects).

        ``elsewhere``: a channel (of any guild) where the bot posted a copy of ``message`` with the same components;
        the click is on that copy, so it comes with that channel and its guild, as Discord delivers it."""
        msg = self._messages[_id_of(message)]
        if elsewhere is not None:
            body = {"content": msg["content"], "components": copy.deepcopy(msg["components"])}
            msg = self._new_message(self._channel(elsewhere), author=self.bot, body=body, source="bot")
        ch = self.channels[int(msg["channel_id"])]
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": component_type}
        if values is not None:
            data["values"] = list(values)
        payload, iid, token = self._interaction_payload(3, user, ch, data, locale=locale, message=msg)
        inter = FakeInteraction(
            id=iid,
            token=token,
            type=3,
            payload=payload,
            user_id=user.id,
            channel_id=ch.id,
            guild_id=ch.guild_id,
            command_name=None,
            component_message_id=int(msg["id"]),
        )
        return await self._dispatch_interaction(inter)

    async def submit_modal(
        self, user: FakeUser, channel: Any, custom_id: str, values: dict[str, str], /, *, locale: str = "en-US"
    ) -> FakeInteraction:
        """Type-5 modal submit; ``values`` maps text-input custom_id -> value."""
        ch = self._channel(channel)
        components = [{"type": 1, "components": [{"type": 4, "custom_id": k, "value": v}]} for k, v in values.items()]
        payload, iid, token = self._interaction_payload(
            5, user, ch, {"custom_id": custom_id, "components": components}, locale=locale
        )
        inter = FakeInteraction(
            id=iid,
            token=token,
            type=5,
            payload=payload,
            user_id=user.id,
            channel_id=ch.id,
            guild_id=ch.guild_id,
            command_name=None,
        )
        return await self._dispatch_interaction(inter)

    def _snapshot(self, inter: FakeInteraction, kind: str, msg: dict[str, Any]) -> None:
        inter.responses.append(ResponseEvent(kind=kind, message=copy.deepcopy(msg)))
        self._notify()

    # ---------------------------------------------------------------------------------------------- HTTP plumbing

    def _add_routes(self, app: web.Application) -> None:
        r = app.router
        a = API_PREFIX
        r.add_get("/", self._ws_handler)
        r.add_get("/attachments/{channel_id}/{attachment_id}/{filename}", self._h_cdn)
        r.add_get(f"{a}/users/@me", self._h_users_me)
        r.add_post(f"{a}/users/@me/channels", self._h_create_dm)
        r.add_get(f"{a}/users/{{user_id}}", self._h_get_user)
        r.add_get(f"{a}/oauth2/applications/@me", self._h_app_info)
        r.add_get(f"{a}/applications/@me", self._h_app_info)
        r.add_get(f"{a}/gateway", self._h_gateway)
        r.add_get(f"{a}/gateway/bot", self._h_gateway_bot)
        r.add_get(f"{a}/applications/{{app_id}}/commands", self._h_get_commands)
        r.add_put(f"{a}/applications/{{app_id}}/commands", self._h_put_commands)
        r.add_get(f"{a}/applications/{{app_id}}/guilds/{{guild_id}}/commands", self._h_get_commands)
        r.add_put(f"{a}/applications/{{app_id}}/guilds/{{guild_id}}/commands", self._h_put_commands)
        r.add_get(f"{a}/guilds/{{guild_id}}", self._h_get_guild)
        r.add_get(f"{a}/guilds/{{guild_id}}/channels", self._h_guild_channels)
        r.add_get(f"{a}/guilds/{{guild_id}}/roles", self._h_guild_roles)
        r.add_get(f"{a}/guilds/{{guild_id}}/members/{{user_id}}", self._h_guild_member)
        r.add_get(f"{a}/guilds/{{guild_id}}/threads/active", self._h_active_threads)
        r.add_get(f"{a}/guilds/{{guild_id}}/webhooks", self._h_guild_webhooks)
        r.add_get(f"{a}/channels/{{channel_id}}", self._h_get_channel)
        r.add_patch(f"{a}/channels/{{channel_id}}", self._h_edit_channel)
        r.add_delete(f"{a}/channels/{{channel_id}}", self._h_delete_channel)
        r.add_get(f"{a}/channels/{{channel_id}}/messages", self._h_list_messages)
        r.add_post(f"{a}/channels/{{channel_id}}/messages", self._h_create_message)
        r.add_get(f"{a}/channels/{{channel_id}}/messages/{{message_id}}", self._h_get_message)
        r.add_patch(f"{a}/channels/{{channel_id}}/messages/{{message_id}}", self._h_edit_message)
        r.add_delete(f"{a}/channels/{{channel_id}}/messages/{{message_id}}", self._h_delete_message)
        r.add_route(
            "*", f"{a}/channels/{{channel_id}}/messages/{{message_id}}/reactions/{{emoji}}/@me", self._h_reaction
        )
        r.add_post(f"{a}/channels/{{channel_id}}/messages/{{message_id}}/threads", self._h_thread_from_message)
        r.add_post(f"{a}/channels/{{channel_id}}/typing", self._h_typing)
        r.add_post(f"{a}/channels/{{channel_id}}/threads", self._h_create_thread)
        r.add_get(f"{a}/channels/{{channel_id}}/threads/archived/{{kind}}", self._h_archived_threads)
        r.add_get(f"{a}/channels/{{channel_id}}/users/@me/threads/archived/private", self._h_archived_threads)
        r.add_route("*", f"{a}/channels/{{channel_id}}/thread-members/{{user_id}}", self._h_thread_member)
        r.add_get(f"{a}/channels/{{channel_id}}/webhooks", self._h_channel_webhooks)
        r.add_post(f"{a}/channels/{{channel_id}}/webhooks", self._h_create_webhook)
        r.add_post(f"{a}/interactions/{{interaction_id}}/{{token}}/callback", self._h_interaction_callback)
        r.add_get(f"{a}/webhooks/{{webhook_id}}", self._h_get_webhook)
        r.add_get(f"{a}/webhooks/{{webhook_id}}/{{token}}", self._h_get_webhook)
        r.add_post(f"{a}/webhooks/{{webhook_id}}/{{token}}", self._h_execute_webhook)
        r.add_route("*", f"{a}/webhooks/{{webhook_id}}/{{token}}/messages/{{message_id}}", self._h_webhook_message)
        r.add_route("*", "/{tail:.*}", self._h_unknown)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        if request.path == "/" and request.headers.get("Upgrade", "").lower() == "websocket":
            return await handler(request)
        api_path = request.path[len(API_PREFIX) :] if request.path.startswith(API_PREFIX) else request.path
        body, files = await self._read_body(request)
        request[_BODY], request[_FILES] = body, files
        record = RecordedRequest(
            method=request.method,
            path=api_path,
            json=body,
            query=dict(request.query),
            files=[(f[1], f[2]) for f in files],
            at=self.now(),
        )
        self.requests.append(record)
        rule = self._take_failure(request.method, api_path)
        response: web.StreamResponse
        if rule is not None and not rule.after_commit:
            response = self._failure_response(rule)
        else:
            try:
                self._check_auth(request, api_path)
                response = await handler(request)
            except _ApiError as exc:
                response = exc.response()
            if rule is not None:
                response = self._failure_response(rule)
        if rule is not None and rule.status == 0 and request.transport is not None:
            request.transport.close()  # the connection drops: the client never learns what happened
        record.status = response.status
        record.injected = rule is not None
        log.debug("%s %s -> %s", request.method, request.path_qs, response.status)
        self._notify()
        return response

    def _check_auth(self, request: web.Request, api_path: str) -> None:
        if not request.path.startswith(API_PREFIX):
            return
        # Webhook and interaction routes authenticate with the token in the URL.
        if api_path.startswith(("/webhooks/", "/interactions/")) or api_path == "/gateway":
            return
        if request.headers.get("Authorization") != f"Bot {self.bot_token}":
            raise _ApiError(401, 0, "401: Unauthorized")

    @staticmethod
    async def _read_body(request: web.Request) -> tuple[Any, _FileParts]:
        if not request.can_read_body:
            return None, []
        ctype = request.content_type
        if ctype == "multipart/form-data":
            body: Any = None
            files: _FileParts = []
            reader = await request.multipart()
            async for part in reader:
                if part.name == "payload_json":
                    body = json.loads(await part.text())
                elif part.filename is not None:
                    blob = bytes(await part.read())
                    files.append((part.name or "", part.filename, blob, part.headers.get("Content-Type", "")))
            return body, files
        raw = await request.read()
        if not raw:
            return None, []
        if ctype == "application/json":
            return json.loads(raw), []
        return raw.decode("utf-8", "replace"), []

    async def _h_unknown(self, request: web.Request) -> web.Response:
        self.unhandled_requests.append((request.method, request.path))
        log.warning(
            "FakeDiscord has no route for %s %s: add one to tests/fakes/discord_server.py",
            request.method,
            request.path_qs,
        )
        return _json_response(
            {"code": 0, "message": f"404: Not Found (fake discord has no route for {request.method} {request.path})"},
            status=404,
        )

    def _channel_or_404(self, request: web.Request) -> FakeChannel:
        try:
            cid = int(request.match_info["channel_id"])
        except ValueError:
            raise _ApiError(404, 10003, "Unknown Channel") from None
        channel = self.channels.get(cid)
        if channel is None or channel.deleted:
            raise _ApiError(404, 10003, "Unknown Channel")
        return channel

    def _message_or_404(self, channel_id: int, raw_id: str) -> dict[str, Any]:
        try:
            mid = int(raw_id)
        except ValueError:
            raise _ApiError(404, 10008, "Unknown Message") from None
        msg = self._messages.get(mid)
        meta = self._message_meta.get(mid)
        if msg is None or meta is None or meta.deleted or meta.channel_id != channel_id or not meta.public:
            raise _ApiError(404, 10008, "Unknown Message")
        return msg

    # ---------------------------------------------------------------------------------------------- REST: login

    async def _h_users_me(self, request: web.Request) -> web.Response:
        return _json_response(self._self_user_payload())

    async def _h_get_user(self, request: web.Request) -> web.Response:
        user = self.users.get(int(request.match_info["user_id"]))
        if user is None:
            raise _ApiError(404, 10013, "Unknown User")
        return _json_response(user.payload())

    async def _h_create_dm(self, request: web.Request) -> web.Response:
        uid = int((request[_BODY] or {}).get("recipient_id", 0))
        if uid not in self.users:
            raise _ApiError(400, 50033, "Invalid Recipient(s)")
        return _json_response(self._channel_payload(self.add_dm_channel(self.users[uid])))

    async def _h_app_info(self, request: web.Request) -> web.Response:
        return _json_response(
            {
                "id": str(self.application_id),
                "name": self.bot.name,
                "icon": None,
                "description": "",
                "summary": "",
                "type": None,
                "rpc_origins": [],
                "bot_public": True,
                "bot_require_code_grant": False,
                "bot": self._self_user_payload(),
                "owner": self.app_owner.payload(),
                "team": None,
                "verify_key": "0" * 64,
                # GATEWAY_GUILD_MEMBERS_LIMITED | GATEWAY_MESSAGE_CONTENT_LIMITED, like an unverified bot with both on
                "flags": (1 << 15) | (1 << 19),
                "tags": [],
                "redirect_uris": [],
                # must be null, or discord.py warns that interactions will not arrive over the gateway
                "interactions_endpoint_url": None,
                "role_connections_verification_url": None,
                "approximate_guild_count": len(self.guilds),
                "integration_types_config": {"0": {}},
            }
        )

    async def _h_gateway(self, request: web.Request) -> web.Response:
        return _json_response({"url": self.gateway_url})

    async def _h_gateway_bot(self, request: web.Request) -> web.Response:
        return _json_response(
            {
                "url": self.gateway_url,
                "shards": 1,
                "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1},
            }
        )

    async def _h_cdn(self, request: web.Request) -> web.Response:
        self.cdn_requests.append(request.path)
        blob = self._attachment_blobs.get(int(request.match_info["attachment_id"]))
        if blob is None:
            return web.Response(status=404)
        return web.Response(body=blob, headers={"Content-Type": "application/octet-stream"})

    # ---------------------------------------------------------------------------------------------- REST: commands

    @staticmethod
    def _validate_localizations(item: dict[str, Any], path: str) -> None:
        """Like Discord: a localization is keyed by a locale Discord knows, and is 1–100 characters."""
        for key in ("name_localizations", "description_localizations"):
            for locale, text in (item.get(key) or {}).items():
                if locale not in DISCORD_LOCALES:
                    raise _form_error(f"{path}.{key}", "LOCALE_INVALID", f"Invalid locale {locale!r}")
                if not 1 <= len(text) <= 100:
                    raise _form_error(
                        f"{path}.{key}.{locale}", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                    )

    def _validate_command(self, cmd: dict[str, Any], path: str, depth: int = 0) -> None:
        name = cmd.get("name", "")
        is_chat = cmd.get("type", 1) in (1, 3, 4) if depth == 0 else True
        if is_chat and (not re.fullmatch(r"[-_\w]{1,32}", name) or name != name.lower()):
            raise _form_error(f"{path}.name", "APPLICATION_COMMAND_INVALID_NAME", f"Command name is invalid: {name!r}")
        desc = cmd.get("description", "")
        if (depth > 0 or cmd.get("type", 1) == 1) and not 1 <= len(desc) <= 100:
            raise _form_error(f"{path}.description", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
        self._validate_localizations(cmd, path)
        for i, choice in enumerate(cmd.get("choices") or []):
            self._validate_localizations(choice, f"{path}.choices.{i}")
        options = cmd.get("options") or []
        if len(options) > 25:
            raise _form_error(f"{path}.options", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
        seen_optional = False
        for i, opt in enumerate(options):
            if opt.get("type") in (1, 2):
                if depth >= 2 or (depth == 1 and opt["type"] == 2):
                    raise _form_error(
                        f"{path}.options.{i}",
                        "APPLICATION_COMMAND_OPTIONS_TYPE_INVALID",
                        "Subcommand groups cannot be nested this deep",
                    )
            elif opt.get("required"):
                if seen_optional:
                    raise _form_error(
                        f"{path}.options.{i}",
                        "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                        "Required options must be placed before non-required options",
                    )
            else:
                seen_optional = True
            if len(opt.get("choices") or []) > 25:
                raise _form_error(
                    f"{path}.options.{i}.choices", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                )
            self._validate_command(opt, f"{path}.options.{i}", depth + 1)

    async def _h_put_commands(self, request: web.Request) -> web.Response:
        if int(request.match_info["app_id"]) != self.application_id:
            raise _ApiError(403, 50001, "Missing Access")
        body = request[_BODY] or []
        guild_id = int(request.match_info["guild_id"]) if "guild_id" in request.match_info else None
        if guild_id is not None and guild_id not in self.guilds:
            raise _ApiError(403, 50001, "Missing Access")
        old = self._guild_commands.get(guild_id, []) if guild_id is not None else self._global_commands
        old_ids = {(c["name"], c.get("type", 1)): c["id"] for c in old}
        stored: list[dict[str, Any]] = []
        for i, cmd in enumerate(body):
            self._validate_command(cmd, str(i))
            perms = cmd.get("default_member_permissions")
            echoed = {
                **cmd,
                "id": old_ids.get((cmd["name"], cmd.get("type", 1))) or str(self._snowflake()),
                "application_id": str(self.application_id),
                "version": str(self._snowflake()),
                "type": cmd.get("type", 1),
                "description": cmd.get("description", ""),
                # discord.py sends an int; Discord echoes a string
                "default_member_permissions": str(perms) if perms is not None else None,
                "dm_permission": cmd.get("dm_permission", True),
                "nsfw": cmd.get("nsfw", False),
            }
            if guild_id is not None:
                echoed["guild_id"] = str(guild_id)
            stored.append(echoed)
        if guild_id is not None:
            self._guild_commands[guild_id] = stored
        else:
            self._global_commands = stored
        return _json_response(stored)

    async def _h_get_commands(self, request: web.Request) -> web.Response:
        guild_id = int(request.match_info["guild_id"]) if "guild_id" in request.match_info else None
        cmds = self._guild_commands.get(guild_id, []) if guild_id is not None else self._global_commands
        return _json_response(cmds)

    # ---------------------------------------------------------------------------------------------- REST: guilds

    def _guild_or_404(self, request: web.Request) -> FakeGuild:
        guild = self.guilds.get(int(request.match_info["guild_id"]))
        if guild is None:
            raise _ApiError(404, 10004, "Unknown Guild")
        return guild

    async def _h_get_guild(self, request: web.Request) -> web.Response:
        guild = self._guild_or_404(request)
        return _json_response({**guild.payload(), "approximate_member_count": len(guild.members)})

    async def _h_guild_channels(self, request: web.Request) -> web.Response:
        guild = self._guild_or_404(request)
        chans = [self.channels[c] for c in guild.channel_ids]
        return _json_response([self._channel_payload(c) for c in chans if not c.is_thread and not c.deleted])

    async def _h_guild_roles(self, request: web.Request) -> web.Response:
        return _json_response([r.payload() for r in self._guild_or_404(request).roles.values()])

    async def _h_guild_member(self, request: web.Request) -> web.Response:
        guild = self._guild_or_404(request)
        member = guild.members.get(int(request.match_info["user_id"]))
        if member is None:
            raise _ApiError(404, 10007, "Unknown Member")
        return _json_response(member.payload())

    async def _h_active_threads(self, request: web.Request) -> web.Response:
        guild = self._guild_or_404(request)
        threads = [c for c in (self.channels[i] for i in guild.channel_ids) if c.is_thread and not c.archived]
        return _json_response(
            {
                "threads": [self._channel_payload(t) for t in threads],
                "members": [t.thread_member_payload(self.bot.id) for t in threads if self.bot.id in t.member_ids],
            }
        )

    # ---------------------------------------------------------------------------------------------- REST: channels

    async def _h_get_channel(self, request: web.Request) -> web.Response:
        return _json_response(self._channel_payload(self._channel_or_404(request)))

    async def _h_edit_channel(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        body = request[_BODY] or {}
        if channel.is_thread:
            if channel.archived and body.get("archived") is not False:
                raise _ApiError(400, 50083, "Thread is archived")
            if "auto_archive_duration" in body and body["auto_archive_duration"] not in ARCHIVE_DURATIONS:
                raise _form_error(
                    "auto_archive_duration", "BASE_TYPE_CHOICES", f"Value must be one of {ARCHIVE_DURATIONS}."
                )
            if "locked" in body and bool(body["locked"]) != channel.locked:
                self._require_bot_permission(channel, PERM_MANAGE_THREADS)
            if "archived" in body and channel.owner_id != self.bot.id:
                self._require_bot_permission(channel, PERM_MANAGE_THREADS)
            if "name" in body:
                channel.name = body["name"]
            if "auto_archive_duration" in body:
                channel.auto_archive_duration = body["auto_archive_duration"]
            if "locked" in body:
                channel.locked = bool(body["locked"])
            if "invitable" in body:
                channel.invitable = bool(body["invitable"])
            if "rate_limit_per_user" in body:
                channel.rate_limit_per_user = body["rate_limit_per_user"] or 0
            if "archived" in body and bool(body["archived"]) != channel.archived:
                channel.archived = bool(body["archived"])
                channel.archive_timestamp = self._wall()
            payload = self._channel_payload(channel)
            await self.dispatch("THREAD_UPDATE", payload, guild_id=channel.guild_id)
            return _json_response(payload)
        for key in ("name", "topic", "position", "rate_limit_per_user"):
            if key in body:
                setattr(channel, key, body[key])
        payload = self._channel_payload(channel)
        await self.dispatch("CHANNEL_UPDATE", payload, guild_id=channel.guild_id)
        return _json_response(payload)

    async def _h_delete_channel(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        payload = self._channel_payload(channel)
        self._delete_channel_state(channel)
        event, data = self._channel_delete_event(channel)
        await self.dispatch(event, data, guild_id=channel.guild_id)
        return _json_response(payload)

    async def _h_typing(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        self.typing.append((channel.id, self.now()))
        return web.Response(status=204)

    async def _h_list_messages(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        limit = max(1, min(100, int(request.query.get("limit", 50))))
        msgs = self.channel_messages(channel.id)
        if "before" in request.query:
            msgs = [m for m in msgs if int(m["id"]) < int(request.query["before"])]
        if "after" in request.query:
            msgs = [m for m in msgs if int(m["id"]) > int(request.query["after"])]
            return _json_response([_as_fetched(m) for m in reversed(msgs[:limit])])
        return _json_response([_as_fetched(m) for m in reversed(msgs[-limit:])])  # newest first, like Discord

    async def _h_create_message(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        body = request[_BODY] or {}
        files = request[_FILES]
        self._require_bot_permission(channel, PERM_SEND_THREADS if channel.is_thread else PERM_SEND)
        if channel.type == CH_DM and not all(self.users[uid].accepts_dms for uid in channel.recipient_ids):
            raise _ApiError(403, 50007, "Cannot send messages to this user")
        nonce = body.get("nonce")
        if nonce is not None and body.get("enforce_nonce"):
            existing = self._find_by_nonce(channel.id, self.bot.id, nonce)
            if existing is not None:
                return _json_response(existing)
        await self._prepare_channel_for_message(channel)
        msg = self._new_message(channel, author=self.bot, body=body, files=files, source="rest")
        await self._publish("MESSAGE_CREATE", msg)
        return _json_response(msg)

    async def _h_get_message(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        return _json_response(_as_fetched(self._message_or_404(channel.id, request.match_info["message_id"])))

    async def _h_edit_message(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        msg = self._message_or_404(channel.id, request.match_info["message_id"])
        if int(msg["author"]["id"]) != self.bot.id:
            raise _ApiError(403, 50005, "Cannot edit a message authored by another user")
        if channel.is_thread and channel.archived:
            raise _ApiError(400, 50083, "Thread is archived")
        if (limited := self._edit_limited(channel.id)) is not None:
            return limited
        self._edit_message(msg, request[_BODY] or {}, request[_FILES])
        await self._publish("MESSAGE_UPDATE", msg)
        return _json_response(msg)

    def _edit_limited(self, channel_id: int) -> web.Response | None:
        """A 429 for an edit past ``edit_rate_limit`` in the channel's window, as Discord's bucket answers it."""
        if self.edit_rate_limit is None:
            return None
        count, window = self.edit_rate_limit
        now = self.now()
        recent = self._edits_by_channel.setdefault(channel_id, deque())
        while recent and recent[0] <= now - window:
            recent.popleft()
        if len(recent) < count:
            recent.append(now)
            return None
        retry_after = round(recent[0] + window - now, 3)
        self.edits_rate_limited += 1
        rule = FailureRule("PATCH", re.compile(""), 429, 0, False, 0, "You are being rate limited.", retry_after, False)
        return self._failure_response(rule)

    async def _h_delete_message(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        msg = self._message_or_404(channel.id, request.match_info["message_id"])
        await self._delete_message(msg)
        return web.Response(status=204)

    async def _h_reaction(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        msg = self._message_or_404(channel.id, request.match_info["message_id"])
        emoji = request.match_info["emoji"]
        self.reactions.append((request.method, int(msg["id"]), emoji))
        self._notify()
        return web.Response(status=204)

    # ---------------------------------------------------------------------------------------------- REST: threads

    def _new_thread(
        self, parent: FakeChannel, body: dict[str, Any], *, thread_type: int, thread_id: int | None = None
    ) -> FakeChannel:
        duration = body.get("auto_archive_duration") or 1440
        if duration not in ARCHIVE_DURATIONS:
            raise _form_error(
                "auto_archive_duration", "BASE_TYPE_CHOICES", f"Value must be one of {ARCHIVE_DURATIONS}."
            )
        name = body.get("name") or ""
        if not 1 <= len(name) <= 100:
            raise _form_error("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
        thread = FakeChannel(
            id=thread_id or self._snowflake(),
            type=thread_type,
            name=name,
            guild_id=parent.guild_id,
            parent_id=parent.id,
            owner_id=self.bot.id,
            auto_archive_duration=duration,
            invitable=bool(body.get("invitable", True)),
            rate_limit_per_user=body.get("rate_limit_per_user") or 0,
            archive_timestamp=self._wall(),
            create_timestamp=self._wall(),
        )
        thread.member_ids.add(self.bot.id)
        self._register_channel(thread)
        return thread

    async def _announce_thread(self, thread: FakeChannel) -> None:
        # The creator's THREAD_CREATE already carries its thread ``member``.
        await self.dispatch(
            "THREAD_CREATE", {**self._channel_payload(thread), "newly_created": True}, guild_id=thread.guild_id
        )

    async def _h_create_thread(self, request: web.Request) -> web.Response:
        parent = self._channel_or_404(request)
        body = request[_BODY] or {}
        if parent.type not in (CH_TEXT, CH_NEWS, CH_FORUM):
            raise _ApiError(400, 50024, "Cannot execute action on this channel type")
        if parent.type == CH_FORUM:
            thread_type = CH_PUBLIC_THREAD
        elif parent.type == CH_NEWS:
            thread_type = CH_NEWS_THREAD
        else:
            # Discord's default when "type" is omitted is a private thread (discord.py always sends it).
            thread_type = int(body.get("type") or CH_PRIVATE_THREAD)
        needed = PERM_PRIVATE_THREADS if thread_type == CH_PRIVATE_THREAD else PERM_PUBLIC_THREADS
        self._require_bot_permission(parent, needed)
        thread = self._new_thread(parent, body, thread_type=thread_type)
        response = self._channel_payload(thread)
        await self._announce_thread(thread)
        if parent.type == CH_FORUM and body.get("message"):
            starter = self._new_message(
                thread, author=self.bot, body=body["message"], files=request[_FILES], source="rest"
            )
            await self._publish("MESSAGE_CREATE", starter)
            response["message"] = starter
        return _json_response(response)

    async def _h_thread_from_message(self, request: web.Request) -> web.Response:
        parent = self._channel_or_404(request)
        msg = self._message_or_404(parent.id, request.match_info["message_id"])
        if int(msg["id"]) in self.channels:
            raise _ApiError(400, 160004, "A thread has already been created for this message")
        self._require_bot_permission(parent, PERM_PUBLIC_THREADS)
        thread_type = CH_NEWS_THREAD if parent.type == CH_NEWS else CH_PUBLIC_THREAD
        # Discord gives a thread started from a message the message's id.
        thread = self._new_thread(parent, request[_BODY] or {}, thread_type=thread_type, thread_id=int(msg["id"]))
        msg["flags"] |= FLAG_HAS_THREAD
        msg["thread"] = self._channel_payload(thread)
        await self._announce_thread(thread)
        return _json_response(self._channel_payload(thread))

    async def _h_archived_threads(self, request: web.Request) -> web.Response:
        parent = self._channel_or_404(request)
        kind = request.match_info.get("kind", "private")
        wanted = CH_PRIVATE_THREAD if kind == "private" else None
        threads = [
            t
            for t in self.threads(parent)
            if t.archived and (t.type == wanted if wanted else t.type != CH_PRIVATE_THREAD)
        ]
        if "before" in request.query:
            before = datetime.fromisoformat(request.query["before"].replace("Z", "+00:00"))
            threads = [t for t in threads if t.archive_timestamp < before]
        threads.sort(key=lambda t: t.archive_timestamp, reverse=True)
        limit = int(request.query.get("limit", 50))
        return _json_response(
            {
                "threads": [self._channel_payload(t) for t in threads[:limit]],
                "members": [
                    t.thread_member_payload(self.bot.id) for t in threads[:limit] if self.bot.id in t.member_ids
                ],
                "has_more": len(threads) > limit,
            }
        )

    async def _h_thread_member(self, request: web.Request) -> web.Response:
        thread = self._channel_or_404(request)
        if not thread.is_thread:
            raise _ApiError(400, 50024, "Cannot execute action on this channel type")
        raw = request.match_info["user_id"]
        uid = self.bot.id if raw == "@me" else int(raw)
        if request.method == "GET":
            if uid not in thread.member_ids:
                raise _ApiError(404, 10007, "Unknown Member")
            return _json_response(thread.thread_member_payload(uid))
        if thread.archived and thread.locked:
            raise _ApiError(400, 50083, "Thread is archived")
        update: dict[str, Any] = {"id": str(thread.id), "guild_id": str(thread.guild_id)}
        if request.method == "PUT":
            thread.member_ids.add(uid)
            update["added_members"] = [thread.thread_member_payload(uid)]
        elif request.method == "DELETE":
            thread.member_ids.discard(uid)
            update["removed_member_ids"] = [str(uid)]
        else:
            raise _ApiError(405, 0, "405: Method Not Allowed")
        update["member_count"] = len(thread.member_ids)
        await self.dispatch("THREAD_MEMBERS_UPDATE", update, guild_id=thread.guild_id)
        return web.Response(status=204)

    # ---------------------------------------------------------------------------------------------- REST: webhooks

    async def _h_create_webhook(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        if channel.is_thread or channel.guild_id is None:
            raise _ApiError(400, 50024, "Cannot execute action on this channel type")
        self._require_bot_permission(channel, PERM_MANAGE_WEBHOOKS)
        body = request[_BODY] or {}
        name = body.get("name") or ""
        if not 1 <= len(name) <= 80 or "discord" in name.lower() or "clyde" in name.lower():
            raise _form_error("name", "WEBHOOK_INVALID_USERNAME", f"Username cannot be {name!r}")
        webhook = FakeWebhook(
            id=self._snowflake(),
            token=secrets.token_urlsafe(48),
            channel_id=channel.id,
            guild_id=channel.guild_id,
            name=name,
            application_id=self.application_id,
            creator_id=self.bot.id,
        )
        self.webhooks[webhook.id] = webhook
        await self.dispatch(
            "WEBHOOKS_UPDATE",
            {"guild_id": str(channel.guild_id), "channel_id": str(channel.id)},
            guild_id=channel.guild_id,
        )
        return _json_response(webhook.payload(self.users))

    async def _h_channel_webhooks(self, request: web.Request) -> web.Response:
        channel = self._channel_or_404(request)
        self._require_bot_permission(channel, PERM_MANAGE_WEBHOOKS)
        hooks = [w.payload(self.users) for w in self.webhooks.values() if w.channel_id == channel.id]
        return _json_response(hooks)

    async def _h_guild_webhooks(self, request: web.Request) -> web.Response:
        guild = self._guild_or_404(request)
        return _json_response([w.payload(self.users) for w in self.webhooks.values() if w.guild_id == guild.id])

    def _webhook_or_error(self, request: web.Request, *, need_token: bool) -> FakeWebhook:
        webhook = self.webhooks.get(int(request.match_info["webhook_id"]))
        if webhook is None:
            raise _ApiError(404, 10015, "Unknown Webhook")
        token = request.match_info.get("token")
        if (need_token or token is not None) and token != webhook.token:
            raise _ApiError(401, 50027, "Invalid Webhook Token")
        return webhook

    async def _h_get_webhook(self, request: web.Request) -> web.Response:
        if "token" not in request.match_info:
            self._check_auth(request, request.path[len(API_PREFIX) :])
        webhook = self._webhook_or_error(request, need_token=False)
        return _json_response(webhook.payload(self.users))

    def _interaction_for_webhook(self, request: web.Request) -> FakeInteraction | None:
        if int(request.match_info["webhook_id"]) != self.application_id:
            return None
        inter = self._interactions_by_token.get(request.match_info["token"])
        if inter is None:
            raise _ApiError(401, 50027, "Invalid Webhook Token")
        if self.now() - inter.dispatched_at > self.interaction_token_ttl:
            raise _ApiError(401, 50027, "Invalid Webhook Token")
        if not inter.acknowledged:
            raise _ApiError(404, 10015, "Unknown Webhook")
        return inter

    def _webhook_target_channel(self, request: web.Request, webhook: FakeWebhook) -> FakeChannel:
        thread_id = request.query.get("thread_id")
        if not thread_id:
            return self.channels[webhook.channel_id]
        thread = self.channels.get(int(thread_id))
        if thread is None or thread.deleted or not thread.is_thread:
            raise _ApiError(404, 10003, "Unknown Channel")
        if thread.parent_id != webhook.channel_id:
            raise _ApiError(400, 220001, "Target channel is not a thread of the webhook channel")
        return thread

    async def _h_execute_webhook(self, request: web.Request) -> web.Response:
        body = request[_BODY] or {}
        files = request[_FILES]
        wait = _truthy_query(request.query.get("wait"))
        inter = self._interaction_for_webhook(request)
        if inter is not None:
            msg = await self._interaction_followup(inter, body, files)
            return _json_response(msg) if wait else web.Response(status=204)
        webhook = self._webhook_or_error(request, need_token=True)
        channel = self._webhook_target_channel(request, webhook)
        username = body.get("username")
        if username is not None and ("discord" in username.lower() or "clyde" in username.lower()):
            raise _form_error("username", "USERNAME_INVALID_CONTAINS", f"Username cannot contain {username!r}")
        await self._prepare_channel_for_message(channel)
        msg = self._new_message(
            channel, author=self.bot, body=body, files=files, source="webhook", webhook=webhook, username=username
        )
        await self._publish("MESSAGE_CREATE", msg)
        return _json_response(msg) if wait else web.Response(status=204)

    async def _h_webhook_message(self, request: web.Request) -> web.Response:
        inter = self._interaction_for_webhook(request)
        raw = request.match_info["message_id"]
        if inter is not None:
            return await self._interaction_webhook_message(request, inter, raw)
        webhook = self._webhook_or_error(request, need_token=True)
        channel = self._webhook_target_channel(request, webhook)
        msg = self._message_or_404(channel.id, raw)
        if msg.get("webhook_id") != str(webhook.id):
            raise _ApiError(403, 50005, "Cannot edit a message authored by another user")
        if request.method == "GET":
            return _json_response(msg)
        if request.method == "PATCH":
            self._edit_message(msg, request[_BODY] or {}, request[_FILES])
            await self._publish("MESSAGE_UPDATE", msg)
            return _json_response(msg)
        if request.method == "DELETE":
            await self._delete_message(msg)
            return web.Response(status=204)
        raise _ApiError(405, 0, "405: Method Not Allowed")

    # ---------------------------------------------------------------------------------------------- REST: interactions

    async def _h_interaction_callback(self, request: web.Request) -> web.Response:
        body = request[_BODY] or {}
        cb_type = int(body.get("type", 0))
        data = body.get("data") or {}
        flags = int(data.get("flags") or 0)
        inter = self.interactions.get(int(request.match_info["interaction_id"]))
        if inter is None or inter.token != request.match_info["token"]:
            raise _ApiError(404, 10062, "Unknown interaction")
        elapsed = self.now() - inter.dispatched_at
        record = CallbackRecord(
            type=cb_type,
            flags=flags,
            data=copy.deepcopy(data),
            elapsed=elapsed,
            status_code=200,
            body=copy.deepcopy(body),
        )
        inter.callbacks.append(record)
        try:
            if elapsed > self.interaction_ack_deadline:
                raise _ApiError(404, 10062, "Unknown interaction")
            if any(c.status_code == 200 for c in inter.callbacks[:-1]):
                raise _ApiError(400, 40060, "Interaction has already been acknowledged.")
            result = await self._apply_callback(inter, cb_type, data, flags, request[_FILES])
        except _ApiError as exc:
            record.status_code, record.error_code = exc.status, exc.code
            self._notify()
            raise
        self._notify()
        return _json_response(result)

    async def _apply_callback(
        self,
        inter: FakeInteraction,
        cb_type: int,
        data: dict[str, Any],
        flags: int,
        files: _FileParts,
    ) -> dict[str, Any]:
        allowed_types = {2: (4, 5, 9), 3: (4, 5, 6, 7, 9), 4: (8,), 5: (4, 5, 6, 7)}.get(inter.type, ())
        if cb_type == 1 or cb_type not in allowed_types:
            raise _ApiError(
                400, 40043, f"Interaction callback type {cb_type} is invalid for interaction type {inter.type}"
            )
        channel = self.channels[inter.channel_id]
        ephemeral = bool(flags & FLAG_EPHEMERAL)
        info: dict[str, Any] = {"id": str(inter.id), "type": inter.type}
        result: dict[str, Any] = {"interaction": info}
        msg_type = 20 if inter.type == 2 else 0
        if cb_type in (4, 5):
            loading = cb_type == 5
            msg = self._new_message(
                channel,
                author=self.bot,
                body={} if loading else data,
                files=[] if loading else files,
                source="interaction",
                public=not ephemeral,
                msg_type=msg_type,
                flags=(FLAG_LOADING if loading else 0) | (FLAG_EPHEMERAL if ephemeral else 0),
                inter=inter,
            )
            inter.original_message_id = int(msg["id"])
            self._snapshot(inter, "deferred" if loading else "initial", msg)
            await self._publish("MESSAGE_CREATE", msg)
            info.update(
                response_message_id=msg["id"], response_message_loading=loading, response_message_ephemeral=ephemeral
            )
            result["resource"] = {"type": cb_type, "message": msg}
        elif cb_type in (6, 7):
            target = self._messages.get(inter.component_message_id or 0)
            if target is None:
                raise _ApiError(400, 40043, "No message to update for this interaction")
            inter.original_message_id = int(target["id"])
            if cb_type == 7:
                self._edit_message(target, data, files)
                self._snapshot(inter, "update", target)
                await self._publish("MESSAGE_UPDATE", target)
                result["resource"] = {"type": 7, "message": target}
            info.update(
                response_message_id=target["id"],
                response_message_loading=False,
                response_message_ephemeral=bool(target["flags"] & FLAG_EPHEMERAL),
            )
        # 8 (autocomplete choices) and 9 (modal) only need recording, done by the caller.
        return result

    async def _interaction_followup(
        self, inter: FakeInteraction, body: dict[str, Any], files: _FileParts
    ) -> dict[str, Any]:
        original = self._messages.get(inter.original_message_id or 0)
        if original is not None and original["flags"] & FLAG_LOADING:
            # After a "thinking" defer the first followup replaces the loading message; ephemerality follows the defer.
            self._edit_message(original, {**body, "flags": None}, files)
            self._snapshot(inter, "followup", original)
            await self._publish("MESSAGE_UPDATE", original)
            return original
        channel = self.channels[inter.channel_id]
        flags = int(body.get("flags") or 0)
        ephemeral = bool(flags & FLAG_EPHEMERAL)
        msg = self._new_message(
            channel,
            author=self.bot,
            body=body,
            files=files,
            source="interaction",
            public=not ephemeral,
            msg_type=20 if inter.type == 2 else 0,
            flags=FLAG_EPHEMERAL if ephemeral else 0,
            inter=inter,
        )
        self._snapshot(inter, "followup", msg)
        await self._publish("MESSAGE_CREATE", msg)
        return msg

    async def _interaction_webhook_message(
        self, request: web.Request, inter: FakeInteraction, raw: str
    ) -> web.Response:
        if raw == "@original":
            mid = inter.original_message_id
        else:
            mid = int(raw) if raw.isdigit() else None
            if mid not in inter.message_ids and mid != inter.original_message_id:
                mid = None
        msg = self._messages.get(mid or 0)
        if msg is None or self._message_meta[int(msg["id"])].deleted:
            raise _ApiError(404, 10008, "Unknown Message")
        if request.method == "GET":
            return _json_response(msg)
        if request.method == "PATCH":
            self._edit_message(msg, request[_BODY] or {}, request[_FILES])
            kind = "original_edit" if int(msg["id"]) == inter.original_message_id else "followup_edit"
            self._snapshot(inter, kind, msg)
            await self._publish("MESSAGE_UPDATE", msg)
            return _json_response(msg)
        if request.method == "DELETE":
            await self._delete_message(msg)
            return web.Response(status=204)
        raise _ApiError(405, 0, "405: Method Not Allowed")
