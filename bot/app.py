"""The bot: a ``commands.AutoShardedBot`` (every shard, or the ``--shards`` given) that logs in (waiting out an
unreachable Discord), then in ``setup_hook`` opens storage, starts the core and the delivery worker, loads the cogs
one by one, and syncs the command schema (after discord.py's ``advanced_startup`` example)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

import discord
import structlog
import yarl
from discord.ext import commands

from bot import heap
from bot.agents.models import ModelFactory
from bot.config import Config
from bot.core.durable.durable_runs import DurableRuns
from bot.core.orchestrator import Orchestrator, People
from bot.core.people.binding_control import BindingControl
from bot.core.people.control import RunControl
from bot.core.people.schedule_control import ScheduleControl
from bot.discord_adapter.approval_board import ApprovalBoard
from bot.discord_adapter.approval_buttons import ApprovalButtons
from bot.discord_adapter.command_translator import CatalogueTranslator
from bot.discord_adapter.conversations import actor_of, author_of, channel_conversation
from bot.discord_adapter.delivery import DeliveryWorker
from bot.discord_adapter.drafts import DiscordDrafts
from bot.discord_adapter.failures import backoff_delay, is_transient, short_reason
from bot.discord_adapter.interaction_errors import ThreadboundTree
from bot.discord_adapter.moderation import MemberModeration
from bot.discord_adapter.persona import WebhookPersona
from bot.discord_adapter.run_buttons import RunButtons
from bot.discord_adapter.status_board import StatusBoard
from bot.discord_adapter.threads import DiscordThreads
from bot.metrics import Metrics
from bot.metrics_service import MetricsService
from bot.records import Actor
from bot.redaction import Redactor
from bot.shards import Shards
from bot.tracing import Tracing
from storage.db import Database
from storage.meta import MetaRepository
from storage.repositories import Repositories
from storage.status_messages import StatusMessageRepository
from storage.webhooks import WebhookRepository

log = structlog.get_logger(__name__)

INITIAL_EXTENSIONS = (
    "cogs.subagents",
    "cogs.stop",
    "cogs.focus",
    "cogs.settings",
    "cogs.schedules",
    "cogs.chat",
    "cogs.threads",
    "cogs.usage",
    "cogs.memory",
)
COMMAND_SCHEMA_KEY = "command_schema_sha256"
LOGIN_RETRY_MAX_DELAY = 60.0


def point_at_discord(config: Config) -> None:
    """Send REST and gateway traffic where the config says.

    That is Discord, a compatible proxy, or a test fake."""
    discord.http.Route.BASE = config.discord.api_base_url.rstrip("/")
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(config.discord.gateway_url)


def bot_intents() -> discord.Intents:
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = True
    intents.message_content = True
    return intents


class ThreadboundBot(commands.AutoShardedBot):
    """One class for one process or several: without ``shards`` discord.py asks Discord how many shards the bot
    needs and runs them all (one, below 2,500 servers), as a plain ``commands.Bot`` would."""

    def __init__(
        self,
        config: Config,
        *,
        shards: Shards | None = None,
        retry_base_delay: float = 2.0,
        guild_ready_timeout: float = 2.0,
        status_edit_interval: float = 1.0,
        clock: Callable[[], float] = time.time,
        redact: Redactor | None = None,
    ) -> None:
        """``shards``: only these of the bot's shards (other processes run the others); ``retry_base_delay``: the
        first wait before retrying Discord (log-in and delivery), doubling after;
        ``status_edit_interval``: the least time between two edits of a run's status message; ``clock``: the
        core's time (runs, deadlines, schedules' slots); ``redact``: the redaction of the secrets (by default, of
        those the config names, read from the environment now)."""
        sharding: dict[str, Any] = {"shard_ids": list(shards.ids), "shard_count": shards.count} if shards else {}
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=bot_intents(),
            tree_cls=ThreadboundTree,
            help_command=None,
            allowed_mentions=discord.AllowedMentions.none(),
            chunk_guilds_at_startup=False,
            guild_ready_timeout=guild_ready_timeout,
            # a longer rate-limit wait fails the request, so a slow edit never holds a run or a delivery up
            max_ratelimit_timeout=config.discord.max_ratelimit_timeout,
            **sharding,
        )
        self.config = config
        self.redact = redact or Redactor.of(config)
        self._shards = shards
        self._retry_base_delay = retry_base_delay
        self._status_edit_interval = status_edit_interval
        self._clock = clock
        self._setup_began = False
        self._db: Database | None = None
        self._orchestrator: Orchestrator | None = None
        self._delivery: DeliveryWorker | None = None
        self._people: People | None = None
        self._status_board: StatusBoard | None = None
        self._approval_board: ApprovalBoard | None = None
        self._reconciling: asyncio.Task[None] | None = None
        self._persona: WebhookPersona | None = None
        self._tracing: Tracing | None = None  # set up in setup_hook, when [tracing] names a collector
        self.metrics = Metrics()  # this bot's own registry; served only with [metrics] listen
        self._metrics_service: MetricsService | None = None

    @property
    def orchestrator(self) -> Orchestrator:
        assert self._orchestrator is not None, "orchestrator is started in setup_hook"
        return self._orchestrator

    @property
    def people(self) -> People:
        """The core's rooms for what people do, handed to the cogs."""
        assert self._people is not None, "the core is built in setup_hook"
        return self._people

    @property
    def bindings(self) -> BindingControl:
        return self.people.bindings

    @property
    def schedules(self) -> ScheduleControl:
        return self.people.schedules

    @property
    def control(self) -> RunControl:
        return self.people.control

    async def author(self, message: discord.Message) -> Actor:
        """Who wrote a message, and whether they moderate in its channel, as :meth:`actor` decides."""
        return author_of(message, await self.moderator_roles(message.guild.id if message.guild else None))

    async def actor(self, interaction: discord.Interaction) -> Actor:
        """Who is acting, and whether they moderate here.

        Moderators have a config role or this server's moderator role."""
        return actor_of(interaction, await self.moderator_roles(interaction.guild_id))

    async def moderator_roles(self, guild_id: int | None) -> list[int]:
        """The config's moderator roles plus the server's own (``/settings thread-bindings moderator_role``)."""
        roles = list(self.config.discord.moderator_role_ids)
        settings = await self.orchestrator.effective_settings(guild_id)
        if settings.moderator_role_id is not None:
            roles.append(settings.moderator_role_id)
        return roles

    async def start(self, token: str, *, reconnect: bool = True) -> None:
        """discord.py's ``start`` (log in, then connect; ``connect`` retries gateway drops itself), with the
        log-in retried while Discord cannot be reached."""
        point_at_discord(self.config)
        await self._log_in(token)
        await self.connect(reconnect=reconnect)

    async def _log_in(self, token: str) -> None:
        """Retry a log-in that failed transiently, forever, with capped exponential backoff.

        Transient is DNS, a refused connection, 5xx or 429; each attempt logs one line. A bot started before the
        network is up comes up by itself.
        A rejected token or any other answer is raised, as is any failure once ``setup_hook`` has begun (running
        it twice would start everything twice)."""
        attempt = 0
        while True:
            try:
                await self.login(token)
                return
            except Exception as error:
                if not is_transient(error) or self._setup_began:
                    raise
                attempt += 1
                delay = backoff_delay(self._retry_base_delay, attempt, LOGIN_RETRY_MAX_DELAY)
                log.warning(
                    f"cannot reach Discord at {self.config.discord.api_base_url}: {short_reason(error)}; "
                    f"retrying in {delay:g}s"
                )
                await self._discard_http_session()
                await asyncio.sleep(delay)

    async def _discard_http_session(self) -> None:
        """Close the failed attempt's HTTP session and its connector; the next attempt creates both.

        discord.py opens a fresh HTTP session at every log-in, on a connector the session owns."""
        await self.http.close()
        self.http.connector = discord.utils.MISSING

    async def setup_hook(self) -> None:
        self._setup_began = True
        self._db = await Database.open(self.config.storage.database)
        self._tracing = Tracing.of(self.config.tracing)
        models = ModelFactory(
            self.config.providers, agents=self.config.agents, pricing=self.config.pricing, metrics=self.metrics
        )
        if models.offline:
            log.warning("no_provider_configured", hint="the built-in offline model answers every request")
        repos = Repositories.over(self._db, self.config.durability.executor_id)
        durability = self.config.durability
        traced = self._tracing is not None  # DBOS's spans too
        durable = DurableRuns(durability, self.config.storage, traced=traced) if durability.resume_interrupted else None
        self._persona = WebhookPersona(self, self._db, WebhookRepository(self._db), repos.bindings)
        drafts = DiscordDrafts(self, repos.run_drafts, self._persona, interval=self.config.discord.stream_edit_seconds)
        self._orchestrator = Orchestrator(
            self.config,
            self._db,
            models,
            threads=DiscordThreads(self),
            drafts=drafts,
            clock=self._clock,
            repos=repos,
            channel_conversation=channel_conversation,
            durable=durable,
            shards=self._shards.spec if self._shards else None,
            redact=self.redact,
            tracer_provider=self._tracing.provider if self._tracing is not None else None,
        )
        self._delivery = DeliveryWorker(
            self,
            self._db,
            repos.outbox,
            on_delivered=self._orchestrator.announcement_delivered,
            on_failed=self._orchestrator.announcement_delivered,
            give_up_after=self.config.discord.delivery_give_up_after,
            executor_id=self.config.durability.executor_id,
            lease=self.config.discord.delivery_lease,
            persona=self._persona,
            base_delay=self._retry_base_delay,
            run_files=repos.run_files,
            drafts=drafts,
            metrics=self.metrics,
        )
        self._orchestrator.add_outbox_listener(self._delivery.wake)
        self._orchestrator.set_moderation(MemberModeration(self, self.moderator_roles))
        self._people = self._orchestrator.people()
        run_buttons = RunButtons(self.control, self.actor)
        approval_buttons = ApprovalButtons(self._orchestrator.decide_approval, self.actor)
        self.add_dynamic_items(run_buttons.item, approval_buttons.item)
        self._approval_board = ApprovalBoard(
            self,
            repos,
            self.config.agents.defaults.approval_timeout_minutes,
            durability.executor_id,
            controls=approval_buttons.controls,
        )
        self._orchestrator.add_approval_listener(self._approval_board.changed)
        if self.config.discord.status_messages:
            self._status_board = StatusBoard(
                self,
                repos,
                StatusMessageRepository(self._db),
                durability.executor_id,
                controls=run_buttons.controls,
                interval=self._status_edit_interval,
            )
            self._orchestrator.add_run_listener(self._status_board.run_changed)
        await self._orchestrator.start()
        await self._delivery.start()
        self._metrics_service = MetricsService(self.metrics, repos.gauges, self.config, self._clock)
        await self._metrics_service.start()
        self._approval_board.start()
        if self._status_board is not None:
            await self._status_board.start()
        self._reconciling = asyncio.create_task(self._orchestrator.reconcile_bindings(), name="reconcile-bindings")
        for extension in INITIAL_EXTENSIONS:
            try:
                await self.load_extension(extension)
            except Exception:
                log.exception("extension_failed_to_load", extension=extension)
        await self.tree.set_translator(CatalogueTranslator())
        await self._sync_commands(self._db)
        heap.freeze_start_up()

    async def _sync_commands(self, db: Database) -> None:
        """Sync to the dev guild at every start (fast); globally only when the schema changed."""
        meta = MetaRepository(db)
        guild_id = self.config.discord.dev_guild_id
        if guild_id is not None:
            guild = discord.Object(guild_id)
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)
            log.info("commands_synced", scope="guild", guild_id=guild_id)
            return
        translator = self.tree.translator
        assert translator is not None, "set in setup_hook"
        commands = [await command.get_translated_payload(self.tree, translator) for command in self.tree.get_commands()]
        schema = json.dumps(commands, sort_keys=True)  # a changed translation is a changed schema
        digest = hashlib.sha256(schema.encode()).hexdigest()
        if await meta.get(COMMAND_SCHEMA_KEY) == digest:
            return
        await self.tree.sync()
        async with db.transaction() as tx:
            await meta.set(tx, COMMAND_SCHEMA_KEY, digest)
        log.info("commands_synced", scope="global")

    async def on_message(self, message: discord.Message) -> None:
        """Prefix commands are not used; the chat cog handles messages."""

    async def close(self) -> None:
        """Stop every part, then Discord's connection, the traces' exporter and the store.

        Those three whatever a part's close raised (left open, the connection kept the process's event loop from
        closing)."""
        heap.thaw()
        try:
            if self._reconciling is not None:
                self._reconciling.cancel()
            if self._metrics_service is not None:
                await self._metrics_service.close()
            if self._status_board is not None:
                await self._status_board.close()
            if self._approval_board is not None:
                await self._approval_board.close()
            if self._delivery is not None:
                await self._delivery.close()
            if self._orchestrator is not None:
                await self._orchestrator.close()
            if self._persona is not None:
                await self._persona.close()
        finally:
            await super().close()
            if self._tracing is not None:  # after the runs stopped: their last spans are sent
                tracing, self._tracing = self._tracing, None
                await tracing.close()
            if self._db is not None:
                await self._db.close()
                self._db = None
