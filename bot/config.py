"""Typed configuration: a TOML file parsed into pydantic models.

Secrets never live in the file: keys ending in ``_env`` name the environment variable that holds them;
:func:`check_secrets` reports the first one that is missing, :func:`missing_secrets` all of them. Every problem
becomes a :class:`ConfigError` whose message names the key to fix, so ``python -m bot`` can print one clear line
instead of a traceback.
"""

from __future__ import annotations

import os
import re
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from bot.cron import cron_trigger, time_zone
from bot.durations import MAX_LIFETIME_HOURS, parse_duration
from bot.profiles import Delegate, DelegateToolConfig, RiskProfile, RuntimeProfile, Section, delegate_problems
from bot.text import has_visible_text

AGENT_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = get_args(ThinkingLevel)
TOOL_RESULT_MAX_BYTES = 64 * 1024
TOOL_RESULT_MAX_BINARY_BYTES = 2 * 1024 * 1024


class ConfigError(Exception):
    """A configuration problem, worded for whoever fixes the file or the environment."""


def _positive_duration(value: object) -> float:
    """A duration written as people type it (``"24h"``, ``"90m"``, ``"1d"``, ``"30s"``), in seconds."""
    example = '"24h", "90m" or "1d"'
    if not isinstance(value, str):
        raise ValueError(f"must be a duration in quotes such as {example}, not {value!r}")
    try:
        seconds = parse_duration(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a duration; write it like {example}") from None
    if seconds <= 0:
        raise ValueError(f"must be longer than zero, like {example} (there is no retrying forever)")
    return seconds


Duration = Annotated[float, BeforeValidator(_positive_duration)]


class DiscordConfig(Section):
    token_env: str = "DISCORD_TOKEN"
    api_base_url: str = "https://discord.com/api/v10"
    gateway_url: str = "wss://gateway.discord.gg/"
    dev_guild_id: int | None = None
    moderator_role_ids: list[int] = Field(default_factory=list)
    status_messages: bool = True
    route_bot_messages: bool = False
    max_active_runs_per_member: Annotated[int, Field(ge=0)] = 5
    delivery_give_up_after: Duration = 24 * 3600.0
    delivery_lease: Duration = 60.0
    max_attachments: Annotated[int, Field(ge=0)] = 4  # files one message may attach (0: none accepted)
    max_attachment_bytes: Annotated[int, Field(ge=1)] = 512 * 1024  # one file's size
    max_attachments_total_bytes: Annotated[int, Field(ge=1)] = 2 * 1024 * 1024  # all of one message's files
    stream_answers: bool = True  # answers appear while they are written (each server may turn it off: /settings)
    stream_edit_seconds: Annotated[float, Field(ge=0.5, le=10)] = 1.2  # the least time between edits of a message
    max_ratelimit_timeout: Annotated[float, Field(ge=30)] = 30.0  # a longer rate-limit wait fails the request instead


class StorageConfig(Section):
    """``[storage]``: a SQLite file (``path``, the default), or ``url``: ``postgresql://user@host:port/dbname``
    (its password from the environment, ``PGPASSWORD``, or ``~/.pgpass``: never the config file) or
    ``sqlite:///relative/path`` (``sqlite:////absolute/path``)."""

    path: str = "data/threadbound.sqlite3"
    url: str | None = None

    @model_validator(mode="after")
    def _one_database(self) -> StorageConfig:
        if self.url is None:
            return self
        if "path" in self.model_fields_set:
            raise ValueError("set either path (a SQLite file) or url, not both")
        scheme, _, rest = self.url.partition("://")
        if scheme not in ("postgresql", "postgres", "sqlite") or not rest:
            raise ValueError(f"url {self.url!r} is neither postgresql://… nor sqlite:///…")
        if scheme != "sqlite" and ":" in rest.partition("@")[0] and "@" in rest:
            raise ValueError("url holds a password; put it in the PGPASSWORD environment variable or ~/.pgpass")
        return self

    @property
    def database(self) -> str:
        """What ``Database.open`` takes."""
        return self.url or self.path

    @property
    def local_file(self) -> str:
        """The SQLite file, or for PostgreSQL the default file path: where local files such as the durable-runs
        journal go by default."""
        if self.url is None:
            return self.path
        return self.url.removeprefix("sqlite:///") if self.url.startswith("sqlite:///") else self.path


DEFAULT_EXECUTOR_ID = "local"


class DurabilityConfig(Section):
    """``[durability]``: runs as DBOS workflows, so a run cut off by a crash or a restart resumes from its last
    completed step. ``system_database``: DBOS's journal, a SQLite file or a ``postgresql://`` url (default: the
    PostgreSQL store itself, else the SQLite store's file + ``.dbos``); ``application_version``: the version DBOS
    recovers (a process recovers only its own version's workflows); ``executor_id``: this process's stable id (a
    process recovers only its own id's workflows; with ``--shards`` and the default, derived from the shards);
    ``heartbeat_seconds``: how often a process says it is alive and looks for dead ones; ``lease_seconds``: how long
    without a heartbeat before a process counts as dead (a live one then resumes or settles its runs);
    ``queue_poll_seconds``: how often each process looks for queued runs it has room for (it also looks at once when
    it queues a run or one of its workflows ends; a run with room only in another process starts within about that
    long; a poll costs each process a few milliseconds of CPU per queue, so a much shorter interval keeps an idle
    process noticeably busy); under a second, also how often it looks for the runs it resumes after a restart."""

    resume_interrupted: bool = True
    system_database: str | None = None
    application_version: str = Field(default="1", min_length=1)
    executor_id: str = Field(default=DEFAULT_EXECUTOR_ID, min_length=1, max_length=100)
    heartbeat_seconds: Annotated[float, Field(gt=0, le=3600)] = 5.0
    lease_seconds: Annotated[float, Field(gt=0, le=86_400)] = 30.0
    queue_poll_seconds: Annotated[float, Field(ge=0.01, le=10)] = 1.0

    @model_validator(mode="after")
    def _lease_outlasts_heartbeats(self) -> DurabilityConfig:
        if self.lease_seconds < 2 * self.heartbeat_seconds:
            raise ValueError(
                f"lease_seconds ({self.lease_seconds:g}) must be at least twice heartbeat_seconds "
                f"({self.heartbeat_seconds:g}), or a live process that is a little late counts as dead"
            )
        return self


RetentionDays = Annotated[int, Field(ge=0, le=36_500)]


class RetentionConfig(Section):
    """``[retention]``: how long finished things stay in the database (0 days = forever), so it does not grow
    without bound; ``journal_days``: the durable-runs journal of workflows that ended (open-source DBOS keeps it for
    ever). Passes run at start-up and every ``interval_minutes``, ``batch_size`` rows per transaction."""

    archived_sessions_days: RetentionDays = 30
    transcripts_days: RetentionDays = 30
    outbox_days: RetentionDays = 30
    memory_days: RetentionDays = 180  # agents' memories, by when each was stored
    journal_days: RetentionDays = 7
    batch_size: Annotated[int, Field(ge=1, le=10_000)] = 500
    interval_minutes: Annotated[int, Field(ge=1, le=10_080)] = 60


class MemoryConfig(Section):
    """``[memory]``: agents' memories (``memory_store``/``memory_recall``/``memory_forget``), kept per agent and
    server, once an operator turns it on (it keeps what members say). ``inject_tokens``: the budget of recalled
    memories put in a top-level turn's system prompt (estimated as characters / 4; 0: none)."""

    enabled: bool = False
    inject_tokens: Annotated[int, Field(ge=0, le=16_000)] = 400
    recall_limit: Annotated[int, Field(ge=1, le=50)] = 5
    max_rows_per_agent: Annotated[int, Field(ge=1, le=100_000)] = 500
    max_content_chars: Annotated[int, Field(ge=1, le=20_000)] = 2000
    auto_save: bool = False  # save each top-level turn's message as a memory (never a scheduled run's)


MIB = 1024 * 1024


class FilesConfig(Section):
    """``[files]``: files an agent returns with ``attach_file``, posted with its run's announcement or reply.

    At most ``max_files_per_run`` per run (Discord takes 10 attachments per message), each at most
    ``max_file_bytes`` (Discord's own upload limit is 10 MiB)."""

    enabled: bool = True
    max_file_bytes: Annotated[int, Field(ge=1, le=10 * MIB)] = MIB
    max_files_per_run: Annotated[int, Field(ge=1, le=10)] = 10


class LoggingConfig(Section):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console"] = "auto"


class TracingConfig(Section):
    """``[tracing]``: OpenTelemetry traces of runs, sent over OTLP/HTTP to ``otlp_endpoint`` (empty: off).

    ``otlp_endpoint`` is the collector's base URL (``http://127.0.0.1:4318``); spans go to its ``/v1/traces``.
    ``include_content``: prompts, answers and tool arguments in the spans too (members' words; off by default)."""

    otlp_endpoint: str = ""
    service_name: Annotated[str, Field(min_length=1, max_length=100)] = "threadbound"
    include_content: bool = False

    @field_validator("otlp_endpoint")
    @classmethod
    def _endpoint_is_a_base_url(cls, value: str) -> str:
        if not value:
            return value
        scheme, _, rest = value.partition("://")
        host = rest.split("/", 1)[0]
        if scheme not in ("http", "https") or not host:
            raise ValueError(f'{value!r} is not an http:// or https:// URL, like "http://127.0.0.1:4318"')
        if "@" in host:
            raise ValueError("the URL holds credentials; put the collector's key in OTEL_EXPORTER_OTLP_HEADERS instead")
        return value.rstrip("/")

    @property
    def traces_url(self) -> str:
        """Where spans are posted: the endpoint's ``/v1/traces`` (OTLP/HTTP's path)."""
        return self.otlp_endpoint if self.otlp_endpoint.endswith("/v1/traces") else self.otlp_endpoint + "/v1/traces"


class MetricsConfig(Section):
    """``[metrics]``: ``listen``, the ``host:port`` this process serves Prometheus metrics on (``/metrics``); empty,
    the default, serves none; ``refresh_seconds``: how often the counts read from the store (runs, lane, approvals,
    heartbeats) are read again."""

    listen: str = ""
    refresh_seconds: Annotated[float, Field(ge=1, le=300)] = 5.0

    @field_validator("listen")
    @classmethod
    def _host_and_port(cls, value: str) -> str:
        if value.strip() == "":
            return ""
        host, colon, port = value.strip().rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ValueError(f'{value!r} is not host:port; write it like "127.0.0.1:9108" (empty: no metrics)')
        return value.strip()

    @property
    def address(self) -> tuple[str, int] | None:
        """The host and port to serve on, or ``None``: metrics off."""
        if not self.listen:
            return None
        host, _, port = self.listen.rpartition(":")
        return host.removeprefix("[").removesuffix("]"), int(port)


class ProviderConfig(Section):
    type: Literal["openai", "anthropic"]
    base_url: str | None = None
    api_key_env: str | None = None
    supports_thinking: bool | None = None
    vision_models: list[str] = Field(default_factory=list)  # its models that read images (names, no provider)


class ModelPrice(Section):
    """``[pricing."<provider>/<model>"]``: what a model costs in USD per million tokens, overriding pydantic-ai's
    price catalogue (for local and proxied models it does not know; ``0`` is explicitly free)."""

    input_per_mtok: Annotated[Decimal, Field(ge=0)]
    output_per_mtok: Annotated[Decimal, Field(ge=0)]


class AgentSubagentSettings(Section):
    """Per-agent sub-agent settings (``[agents.list.<id>.subagents]``); unset keys fall back to the defaults."""

    model: str | None = None
    thinking: ThinkingLevel | None = None
    run_timeout_seconds: Annotated[int, Field(ge=0)] | None = None
    allow_agents: list[str] | None = None
    require_agent_id: bool | None = None


class SubagentDefaults(Section):
    """``max_concurrent``: the sub-agent lane, runs at once (with durable runs, across every process on the store);
    ``max_concurrent_per_process``: with durable runs, at most this many of them in any one process (unset: no
    limit but the lane's). Up to 10,000: a run in flight holds about 100 KiB, a queued one a few.
    ``max_queued``: runs waiting for the lane, all servers together; ``max_queued_per_server``: one server's (DMs
    count as one) share of them (unset: a quarter of ``max_queued``). ``announce``: how the result of a sub-agent
    the main agent spawned reaches people: ``main_agent``, a main-agent turn tells it in its own words (a model turn
    per batch of results), or ``direct``, posted as it is (and joining the main agent's history)."""

    max_concurrent: Annotated[int, Field(ge=1, le=10_000)] = 8
    max_concurrent_per_process: Annotated[int, Field(ge=1, le=10_000)] | None = None
    max_queued: Annotated[int, Field(ge=1)] = 1000
    max_queued_per_server: Annotated[int, Field(ge=1)] | None = None
    max_spawn_depth: Annotated[int, Field(ge=1, le=5)] = 1
    max_children_per_agent: Annotated[int, Field(ge=1, le=20)] = 5
    run_timeout_seconds: Annotated[int, Field(ge=0)] = 0
    archive_after_minutes: Annotated[float, Field(ge=0)] = 60
    model: str | None = None
    thinking: ThinkingLevel | None = None
    allow_agents: list[str] = Field(default_factory=list)
    require_agent_id: bool = False
    announce: Literal["main_agent", "direct"] = "main_agent"

    @property
    def server_queue_share(self) -> int:
        """Runs one server may have waiting for the lane: its setting, else a quarter of the queue (at least 1);
        never more than the whole queue."""
        return min(self.max_queued_per_server or max(1, self.max_queued // 4), self.max_queued)


class AgentDefaults(Section):
    model: str = "openai/gpt-4o-mini"
    fallback_models: list[str] = Field(default_factory=list)  # tried in order when the model cannot answer
    system_prompt: str = "You are a helpful assistant working inside a Discord server. Be concise."
    subagents: SubagentDefaults = SubagentDefaults()
    approval_timeout_minutes: Annotated[float, Field(gt=0)] = 30  # an always_ask call nobody decides on is then denied


Cap = Annotated[int, Field(ge=0)]  # 0: no cap
UsdCap = Annotated[Decimal, Field(ge=0, decimal_places=6)]  # 0: no cap


class BudgetsConfig(Section):
    """``[budgets]``: caps on what members and servers may spend, enforced from recorded usage (0 = no cap). A
    server's own values (``/settings budgets``) replace these there."""

    member_runs_per_hour: Cap = 0
    member_tokens_per_day: Cap = 0
    member_cost_per_day_usd: UsdCap = Decimal(0)
    member_concurrent_runs: Cap = 10  # a member's own runs in progress: safe by default
    server_runs_per_hour: Cap = 0
    server_tokens_per_day: Cap = 0
    server_cost_per_day_usd: UsdCap = Decimal(0)


class AgentWorkspace(Section):
    read_memory_from: list[str] = Field(default_factory=list)  # other agents whose memories this one may recall


class AgentConfig(Section):
    name: str | None = None
    model: str | None = None
    fallback_models: list[str] | None = None  # replaces the defaults' list
    api_key_env: dict[str, str] = Field(default_factory=dict)  # provider → variable of this agent's own key
    system_prompt: str | None = None
    sandboxed: bool = False
    subagents: AgentSubagentSettings = AgentSubagentSettings()
    enabled: bool = True
    risk_profile: str | None = None  # a [risk_profiles.<name>]; none: no constraint
    runtime_profile: str | None = None  # a [runtime_profiles.<name>]; none: the defaults
    delegate_same_risk_profile: bool = True  # may delegate to agents with the same risk profile
    delegates: list[Delegate] = Field(default_factory=list)
    mcp_servers: list[str] = Field(default_factory=list)  # [mcp.servers.<name>] whose tools this agent may use
    workspace: AgentWorkspace = AgentWorkspace()
    tokens_per_day: Cap = 0  # across every server and member
    cost_per_day_usd: UsdCap = Decimal(0)


class AgentsConfig(Section):
    default_agent: str = "main"
    defaults: AgentDefaults = AgentDefaults()
    list: dict[str, AgentConfig] = Field(default_factory=lambda: {"main": AgentConfig()})

    @field_validator("list")
    @classmethod
    def _agent_ids_are_well_formed(cls, agents: dict[str, AgentConfig]) -> dict[str, AgentConfig]:
        for agent_id in agents:
            if not AGENT_ID_PATTERN.match(agent_id):
                raise ValueError(f"agent id {agent_id!r} must match [a-z0-9][a-z0-9_-]{{0,63}}")
        return agents

    @model_validator(mode="after")
    def _default_agent_exists(self) -> AgentsConfig:
        if self.default_agent not in self.list:
            raise ValueError(
                f"default_agent {self.default_agent!r} is not defined; add [agents.list.{self.default_agent}]"
            )
        return self


AutoArchiveMinutes = Literal[60, 1440, 4320, 10080]
AUTO_ARCHIVE_MINUTES: tuple[AutoArchiveMinutes, ...] = get_args(AutoArchiveMinutes)
LifetimeHours = Annotated[float, Field(ge=0, le=MAX_LIFETIME_HOURS)]


class ThreadBindingSettings(Section):
    """``[session.thread_bindings]``: the global defaults for thread-bound sessions."""

    enabled: bool = True
    idle_hours: LifetimeHours = 24
    max_age_hours: LifetimeHours = 0
    spawn_subagent_sessions: bool = False
    auto_archive_minutes: AutoArchiveMinutes = 60
    archive_on_expiry: bool = False


class ThreadBindingOverrides(Section):
    """``[channels.discord.thread_bindings]``: Discord's overrides of the global defaults (unset = inherit)."""

    enabled: bool | None = None
    idle_hours: LifetimeHours | None = None
    max_age_hours: LifetimeHours | None = None
    spawn_subagent_sessions: bool | None = None
    auto_archive_minutes: AutoArchiveMinutes | None = None
    archive_on_expiry: bool | None = None


class SessionConfig(Section):
    thread_bindings: ThreadBindingSettings = ThreadBindingSettings()


class DiscordChannelConfig(Section):
    thread_bindings: ThreadBindingOverrides = ThreadBindingOverrides()


class ChannelsConfig(Section):
    discord: DiscordChannelConfig = DiscordChannelConfig()


MCP_SERVER_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")  # no "_": a tool is named <server>__<tool>


class McpServerConfig(Section):
    """``[mcp.servers.<name>]``: an MCP server whose tools agents may use — a command run over stdio, or a
    Streamable HTTP ``url``. ``env_from`` maps the server's environment variables to the bot's (secrets stay in
    the environment; the server gets nothing else of it but ``HOME``, ``PATH``, ``SHELL`` and ``TERM``).
    ``read_only_tools`` names the server's tools (as the server names them) that only read: when set, a
    ``readonly`` agent may call those and no other, whatever the server's own ``readOnlyHint`` says."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env_from: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 30
    read_only_tools: list[str] | None = None  # unset: the server's readOnlyHint of each tool is trusted

    @field_validator("read_only_tools")
    @classmethod
    def _tool_names(cls, names: list[str] | None) -> list[str] | None:
        for name in names or []:
            if not name.strip() or name != name.strip():
                raise ValueError(f"{name!r} is not a tool name (no blanks or surrounding spaces)")
        return names

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("set either command (a stdio server) or url (a Streamable HTTP server), not both")
        if self.url is not None and (self.args or self.env_from):
            raise ValueError("args and env_from are for a stdio server (command); an HTTP server takes only url")
        return self


ACP_AGENT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


class AcpAgentConfig(Section):
    """``[acp_agents.<name>]``: a coding agent spoken to over the Agent Client Protocol (stdio), run as a sub-agent
    with ``runtime: "acp"``. ``env_from`` maps its environment variables to the bot's, as an MCP server's does;
    ``cwd`` is its working directory, the only place its file requests may read or write."""

    command: str
    args: list[str] = Field(default_factory=list)
    env_from: dict[str, str] = Field(default_factory=dict)
    cwd: str
    timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 30  # to start and answer ``initialize``

    @field_validator("cwd")
    @classmethod
    def _cwd_is_a_directory(cls, cwd: str) -> str:
        resolved = Path(cwd).expanduser().resolve()
        if not resolved.is_dir():
            raise ValueError(f"cwd {cwd!r} is not an existing directory")
        return str(resolved)


def _acp_names_are_well_formed(agents: dict[str, AcpAgentConfig]) -> dict[str, AcpAgentConfig]:
    for name in agents:
        if not ACP_AGENT_NAME.match(name):
            raise ValueError(f"ACP agent name {name!r} must match [a-z0-9][a-z0-9_-]{{0,31}}")
    return agents


class McpConfig(Section):
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names_are_well_formed(cls, servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in servers:
            if not MCP_SERVER_NAME.match(name):
                raise ValueError(f"MCP server name {name!r} must match [a-z0-9][a-z0-9-]{{0,31}} (no underscores)")
            prefixed = [tool for tool in servers[name].read_only_tools or [] if tool.startswith(f"{name}__")]
            if prefixed:
                raise ValueError(
                    f"mcp.servers.{name}.read_only_tools names tools as the server does, without '{name}__': "
                    f"{', '.join(prefixed)}"
                )
        return servers


class ToolList(Section):
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class SubagentToolsConfig(Section):
    tools: ToolList = ToolList()


class ToolsConfig(Section):
    """``[tools]``: ``result_max_bytes``, how much text one tool result may put in the model's context and the
    transcript (cut past it, with a marker the model reads); ``result_max_binary_bytes``, how large one image or
    audio item of a tool result may be (replaced by a note past it)."""

    subagents: SubagentToolsConfig = SubagentToolsConfig()
    result_max_bytes: Annotated[int, Field(ge=1024, le=16 * 1024 * 1024)] = TOOL_RESULT_MAX_BYTES
    result_max_binary_bytes: Annotated[int, Field(ge=0, le=64 * 1024 * 1024)] = TOOL_RESULT_MAX_BINARY_BYTES


class ScheduleConfig(Section):
    """A ``[[schedules]]`` entry: a scheduled agent job (checked against the agents by :class:`Config`)."""

    name: str
    cron: str  # five crontab fields, in ``timezone``
    agent: str
    prompt: str
    channel_id: Annotated[int, Field(gt=0)]
    timezone: str = "UTC"


def schedule_problems(schedules: list[ScheduleConfig], agents: dict[str, AgentConfig]) -> list[str]:
    """Each entry's first problem, worded with its key: a name missing or repeated, a cron expression or time
    zone that cannot be scheduled, an agent that is not configured or not enabled, an empty prompt."""
    problems = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(schedules):
        key = f"schedules[{index}]"
        name = entry.name.strip()
        problem = None
        if not has_visible_text(name):
            problem = f"{key}.name is empty; give the schedule a name"
        elif name in seen:
            problem = f'{key}.name = "{name}" is also the name of schedules[{seen[name]}]; names must be unique'
        else:
            problem = _schedule_timing_problem(key, entry) or _schedule_agent_problem(key, entry, agents)
        if problem is None and not has_visible_text(entry.prompt):
            problem = f"{key}.prompt is empty; write what the agent should do"
        if problem is not None:
            problems.append(problem)
        seen.setdefault(name, index)
    return problems


def _schedule_timing_problem(key: str, entry: ScheduleConfig) -> str | None:
    try:
        time_zone(entry.timezone)
    except ValueError as error:
        return f"{key}.timezone = {error}"
    try:
        cron_trigger(entry.cron, entry.timezone)
    except ValueError as error:
        return f'{key}.cron = "{entry.cron}" is not a valid cron expression: {error}'
    return None


def _schedule_agent_problem(key: str, entry: ScheduleConfig, agents: dict[str, AgentConfig]) -> str | None:
    if entry.agent not in agents:
        return f'{key}.agent = "{entry.agent}" but agents.list.{entry.agent} is not configured'
    if not agents[entry.agent].enabled:
        return f'{key}.agent = "{entry.agent}" but agents.list.{entry.agent}.enabled = false'
    return None


class Config(Section):
    discord: DiscordConfig = DiscordConfig()
    storage: StorageConfig = StorageConfig()
    durability: DurabilityConfig = DurabilityConfig()
    retention: RetentionConfig = RetentionConfig()
    logging: LoggingConfig = LoggingConfig()
    tracing: TracingConfig = TracingConfig()
    metrics: MetricsConfig = MetricsConfig()
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    pricing: dict[str, ModelPrice] = Field(default_factory=dict)
    agents: AgentsConfig = AgentsConfig()
    tools: ToolsConfig = ToolsConfig()
    session: SessionConfig = SessionConfig()
    channels: ChannelsConfig = ChannelsConfig()
    risk_profiles: dict[str, RiskProfile] = Field(default_factory=dict)
    runtime_profiles: dict[str, RuntimeProfile] = Field(default_factory=dict)
    delegate: DelegateToolConfig = DelegateToolConfig()
    mcp: McpConfig = McpConfig()
    acp_agents: Annotated[dict[str, AcpAgentConfig], AfterValidator(_acp_names_are_well_formed)] = Field(
        default_factory=dict
    )
    schedules: list[ScheduleConfig] = Field(default_factory=list)
    budgets: BudgetsConfig = BudgetsConfig()
    memory: MemoryConfig = MemoryConfig()
    files: FilesConfig = FilesConfig()

    def configured_models(self) -> list[str]:
        """Every model reference the config names: what ``model_switch`` may switch to."""
        agents = self.agents
        references = [agents.defaults.model, agents.defaults.subagents.model]
        for agent in agents.list.values():
            references += [agent.model, agent.subagents.model]
        return sorted({reference for reference in references if reference})

    def risk_profile_of(self, agent_id: str) -> RiskProfile | None:
        """The agent's risk profile (``None``: no constraint)."""
        name = self.agents.list[agent_id].risk_profile
        return self.risk_profiles[name] if name is not None else None

    def runtime_profile_of(self, agent_id: str) -> RuntimeProfile:
        """The agent's runtime profile (the defaults when it names none)."""
        name = self.agents.list[agent_id].runtime_profile
        return self.runtime_profiles[name] if name is not None else RuntimeProfile()

    def thread_bindings(self) -> ThreadBindingSettings:
        """Effective thread-binding settings: Discord's overrides on top of the global defaults."""
        overrides = self.channels.discord.thread_bindings.model_dump(exclude_none=True)
        return self.session.thread_bindings.model_copy(update=overrides)

    @model_validator(mode="after")
    def _profiles_and_delegates_are_configured(self) -> Config:
        configured = set(self.agents.list)
        for agent_id, agent in self.agents.list.items():
            for key, name, table in (
                ("risk_profile", agent.risk_profile, self.risk_profiles),
                ("runtime_profile", agent.runtime_profile, self.runtime_profiles),
            ):
                if name is not None and name not in table:
                    known = ", ".join(sorted(table)) or "none"
                    raise ValueError(
                        f"agents.list.{agent_id}.{key} = {name!r} is not defined; add [{key}s.{name}] "
                        f"(defined: {known})"
                    )
            if problems := delegate_problems(agent_id, agent.delegates, configured):
                raise ValueError(problems[0])
            for index, alias in enumerate(agent.workspace.read_memory_from):
                if alias not in configured:
                    raise ValueError(
                        f'agents.list.{agent_id}.workspace.read_memory_from[{index}] = "{alias}" but '
                        f"agents.list.{alias} is not configured (configured: {', '.join(sorted(configured))})"
                    )
            for index, server in enumerate(agent.mcp_servers):
                if server not in self.mcp.servers:
                    known = ", ".join(sorted(self.mcp.servers)) or "none"
                    raise ValueError(
                        f'agents.list.{agent_id}.mcp_servers[{index}] = "{server}" but mcp.servers.{server} is not '
                        f"configured (configured: {known})"
                    )
        if not self.agents.list[self.agents.default_agent].enabled:
            raise ValueError(f"agents.list.{self.agents.default_agent}.enabled = false, but it is the default_agent")
        return self

    @model_validator(mode="after")
    def _schedules_are_runnable(self) -> Config:
        if problems := schedule_problems(self.schedules, self.agents.list):
            raise ValueError(problems[0])
        return self

    @model_validator(mode="after")
    def _model_references_name_providers(self) -> Config:
        if not self.providers:
            return self
        references = {"agents.defaults.model": self.agents.defaults.model}
        if self.agents.defaults.subagents.model:
            references["agents.defaults.subagents.model"] = self.agents.defaults.subagents.model
        references |= _listed("agents.defaults.fallback_models", self.agents.defaults.fallback_models)
        for agent_id, agent in self.agents.list.items():
            if agent.model:
                references[f"agents.list.{agent_id}.model"] = agent.model
            if agent.subagents.model:
                references[f"agents.list.{agent_id}.subagents.model"] = agent.subagents.model
            references |= _listed(f"agents.list.{agent_id}.fallback_models", agent.fallback_models or [])
            for provider in agent.api_key_env:
                if problem := self._unconfigured(provider):
                    raise ValueError(f"agents.list.{agent_id}.api_key_env.{provider} {problem}")
        for key, reference in references.items():
            if problem := self._reference_problem(reference):
                raise ValueError(f"{key} = {reference!r} {problem}")
        for reference in self.pricing:
            if problem := self._reference_problem(reference):
                raise ValueError(f'[pricing."{reference}"] {problem}')
        return self

    def _reference_problem(self, reference: str) -> str | None:
        provider, _, name = reference.partition("/")
        return "must look like '<provider>/<model>'" if not name else self._unconfigured(provider)

    def _unconfigured(self, provider: str) -> str | None:
        if provider in self.providers:
            return None
        return f"names provider {provider!r}, which is not configured (configured: {', '.join(sorted(self.providers))})"


def _listed(key: str, references: list[str]) -> dict[str, str]:
    """Each entry of a list of model references, keyed as the config names it.

    For example ``key[1]``."""
    return {f"{key}[{index}]": reference for index, reference in enumerate(references)}


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc)


def _describe(error: ErrorDetails) -> str:
    where = _location(error["loc"])
    if error["type"] == "extra_forbidden":
        return f"unknown key '{where}' (check the spelling against config.example.toml)"
    if error["type"] == "missing":
        return f"missing key '{where}'"
    message = error["msg"].removeprefix("Value error, ")
    return f"'{where}': {message}" if where else message


def parse_config(text: str, source: str = "config") -> Config:
    """Parse TOML text into a :class:`Config`, turning every problem into a :class:`ConfigError`."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source} is not valid TOML: {exc}") from None
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(_describe(error) for error in exc.errors())
        raise ConfigError(f"{source}: {problems}") from None


def load_config(path: str | os.PathLike[str]) -> Config:
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"config file {str(file)!r} not found; copy config.example.toml there and edit it")
    return parse_config(file.read_text(encoding="utf-8"), source=str(file))


def required_env_vars(config: Config) -> dict[str, str]:
    """Environment variables the config points at, keyed by the config key that names them."""
    names = {"discord.token_env": config.discord.token_env}
    for provider_name, provider in config.providers.items():
        if provider.api_key_env:
            names[f"providers.{provider_name}.api_key_env"] = provider.api_key_env
    for agent_id, agent in config.agents.list.items():
        for provider_name, variable in agent.api_key_env.items():
            names[f"agents.list.{agent_id}.api_key_env.{provider_name}"] = variable
    for server_name, server in config.mcp.servers.items():
        for variable, source in server.env_from.items():
            names[f"mcp.servers.{server_name}.env_from.{variable}"] = source
    for acp_name, acp_agent in config.acp_agents.items():
        for variable, source in acp_agent.env_from.items():
            names[f"acp_agents.{acp_name}.env_from.{variable}"] = source
    return names


def missing_secrets(config: Config, environ: dict[str, str] | None = None) -> list[str]:
    """One line per secret whose environment variable is unset or empty, the token first.

    ``--check`` prints them all among its other results: a config is worth checking before its secrets exist.
    """
    env = os.environ if environ is None else environ
    return [
        f"environment variable {variable} is not set (named by {key} in the config)"
        for key, variable in required_env_vars(config).items()
        if not env.get(variable)
    ]


def check_secrets(config: Config, environ: dict[str, str] | None = None) -> None:
    """Raise :class:`ConfigError` naming the first secret whose environment variable is unset or empty."""
    if missing := missing_secrets(config, environ):
        raise ConfigError(missing[0])


def secret_values(config: Config, environ: dict[str, str] | None = None) -> list[str]:
    """The secret strings themselves, for the one redaction of them (:class:`bot.redaction.Redactor`)."""
    env = os.environ if environ is None else environ
    return [env[var] for var in required_env_vars(config).values() if env.get(var)]
