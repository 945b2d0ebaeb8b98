"""The orchestrator: the core's one public face, for the cogs, the Discord adapter and the app.

It holds the rooms :mod:`bot.core.assembly` builds and keeps only the methods the outside calls; no room ever
receives it. Where a run goes from here (``docs/architecture.md`` draws it): :mod:`bot.core.runs.spawning`
persists it, the launcher (:mod:`bot.core.durable.dispatch`) starts it, :mod:`bot.core.runs.execution` runs its
turns, :mod:`bot.core.runs.settlement` ends it exactly once, and :mod:`bot.core.runs.effects` does what each
commit asks for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from opentelemetry.trace import TracerProvider

from bot.agents.mcp_servers import McpServers
from bot.agents.models import ModelFactory
from bot.config import Config
from bot.core.assembly import build
from bot.core.attachments import FileSource
from bot.core.budgets.limits import BudgetLimits
from bot.core.drafts.port import DraftPort
from bot.core.durable.durable_runs import DurableRuns
from bot.core.guild_settings import EffectiveSettings, GuildSettings
from bot.core.memory.memory_control import MemoryControl
from bot.core.oversight.run_authority import Moderation
from bot.core.people.binding_control import BindingControl
from bot.core.people.control import RunControl
from bot.core.people.schedule_control import ScheduleControl
from bot.core.people.tool_report import ToolReport
from bot.core.people.usage_report import Period, UsageReport
from bot.core.runs.requests import ChatRequest, SpawnAccepted, SpawnRequest
from bot.core.threads.messages import Heard
from bot.core.threads.port import ThreadPort
from bot.i18n import Words
from bot.records import Actor, Cleanup, Origin
from bot.redaction import Redactor
from storage.db import Database
from storage.repositories import Repositories

T = TypeVar("T")


@dataclass(frozen=True)
class People:
    """The rooms the Discord side holds for what people do: runs, bindings, schedules, settings, budgets,
    memories."""

    control: RunControl
    bindings: BindingControl
    schedules: ScheduleControl
    settings: GuildSettings
    budget_limits: BudgetLimits
    memories: MemoryControl


class Orchestrator:
    """The public methods of the core; every room behind them is built by :func:`bot.core.assembly.build`."""

    def __init__(
        self,
        config: Config,
        db: Database,
        models: ModelFactory,
        *,
        threads: ThreadPort | None = None,
        drafts: DraftPort | None = None,
        clock: Callable[[], float] = time.time,
        repos: Repositories | None = None,
        channel_conversation: Callable[[int], str] | None = None,
        mcp_servers: McpServers | None = None,
        durable: DurableRuns | None = None,
        shards: str | None = None,
        redact: Redactor | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        repos = repos or Repositories.over(db, config.durability.executor_id)
        self.core = core = build(
            config,
            repos,
            models,
            threads=threads,
            drafts=drafts,
            clock=clock,
            channel_conversation=channel_conversation,
            mcp_servers=mcp_servers,
            durable=durable,
            shards=shards,
            redact=redact,
            tracer_provider=tracer_provider,
        )
        self._db = repos.db
        # The repositories, for tests and tools that inspect state; the bot's own objects get theirs from app.py.
        self.sessions, self.runs, self.transcripts = repos.sessions, repos.runs, repos.transcripts
        self.outbox, self.inbox, self.bindings = repos.outbox, repos.inbox, repos.bindings
        self.schedules = core.schedules

    # -- lifecycle -------------------------------------------------------------------------------------------

    def add_run_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener`` with a run id whenever that run changes.

        A change is queued, started, a step, settled or killed."""
        self.core.ctx.signals.add_run_listener(listener)

    def add_outbox_listener(self, listener: Callable[[], None]) -> None:
        """Called after every transaction that added outbox rows (the delivery worker wakes on it)."""
        self.core.ctx.signals.add_outbox_listener(listener)

    def add_approval_listener(self, listener: Callable[[], None]) -> None:
        """Called whenever an approval is asked for or settled."""
        self.core.approvals.add_listener(listener)

    def set_moderation(self, moderation: Moderation) -> None:
        """Who moderates where, asked when an agent's tool acts on someone else's run."""
        self.core.authority.moderation = moderation

    async def start(self) -> None:
        """Resume or settle what a previous process left, rebuild timers, then take work."""
        await self.core.start()

    async def close(self) -> None:
        """Stop every task; runs still live stay live in the database and are settled at next start."""
        await self.core.close()

    def people(self) -> People:
        """The rooms the Discord side hands its cogs."""
        core = self.core
        return People(
            core.control,
            core.binding_control,
            core.schedule_control,
            core.guild_settings,
            core.budget_limits,
            core.memory_control,
        )

    # -- what people ask for ---------------------------------------------------------------------------------

    def spawn(self, request: SpawnRequest) -> Coroutine[Any, Any, SpawnAccepted]:
        """The spawn itself, with no frame of its own here: a burst of spawns waits holding less."""
        return self.core.spawning.spawn(request)

    async def chat(self, request: ChatRequest) -> str:
        return await self.core.spawning.chat(request)

    async def unbind(self, thread_id: int, *, farewell: str | None = None) -> bool:
        return await self.core.bindings.unbind(thread_id, farewell=farewell)

    async def thread_message(
        self, thread_id: int, text: str, origin: Origin, *, mod: bool = False, files: FileSource | None = None
    ) -> Heard | None:
        """A person wrote in a thread: ``None`` if it is not bound, else what became of the message.

        ``files``: its attachments, fetched only if the session takes the message."""
        return await self.core.messages.route(thread_id, text, origin, is_moderator=mod, files=files)

    async def reconcile_bindings(self) -> None:
        await self.core.bindings.reconcile()

    async def announcement_delivered(self, run_id: str) -> None:
        """The delivery worker is done with a run's announcement.

        It posted it, or gave up and told the requester. A run-mode thread's binding ends now, and then a
        ``cleanup: delete`` session is archived.
        """
        run = await self.runs.get(run_id)
        session = await self.sessions.get(run.session_key) if run else None
        if session is None:
            return
        await self.core.bindings.end_run_bindings(run_id)
        if session.cleanup == Cleanup.DELETE:
            await self.core.archiving.archive(session.key)

    async def decide_approval(self, actor: Actor, approval_id: str, approve: bool, *, where: Collection[int]) -> Words:
        """A person's Approve or Deny of a paused tool call, from the channels ``where``."""
        return await self.core.approvals.decide(actor, approval_id, approve, where=where)

    async def history(self, session_key: str, limit: int, include_tools: bool) -> list[dict[str, str]]:
        """A session's last ``limit`` transcript entries as ``{role, text}``."""
        return await self.core.queries.history(session_key, limit, include_tools)

    async def tool_report(self, agent_id: str) -> ToolReport:
        """What an agent may call, and why not the rest."""
        return await self.core.tool_reports.report(agent_id)

    async def usage_report(self, *, guild_id: int | None, user_id: int, period: Period) -> UsageReport:
        """What a member spent over a period, and the caps they count against."""
        return await self.core.usage_reports.report(guild_id=guild_id, user_id=user_id, period=period)

    async def effective_settings(self, guild_id: int | None) -> EffectiveSettings:
        """A server's thread-binding settings as they apply now."""
        return await self.core.guild_settings.effective(guild_id)
