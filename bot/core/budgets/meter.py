"""Budgets: caps on runs, tokens and cost per member, per server and per agent, enforced from the usage ledger.

A run is admitted in the transaction that persists it (a spawn, a message, a follow-up, a firing, an agent's
launch): over any cap it is refused, naming the cap, its use and when it frees up, and nothing is written. Before
every model request of a run the daily caps are checked again; a run that reached one fails at that request with
``budget exhausted (<cap>)`` and keeps its partial output. A step's responses are added to the ledger in the
transaction that appends them to the transcript, and a member hears once a day (in the run's channel) when a daily
cap of theirs is 80% used. A runtime profile's ``max_cost_per_day_cents`` caps its agent's daily
spending, in the runtime profile's own words (:mod:`bot.profiles`).

A session that shares its caller's action budget (a ``spawn_subagent`` child, a bounded delegate) spends its
caller's money too: its spending is counted as the budget owner's agent's and meets that agent's caps; an
independent delegate pays as its own agent.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from decimal import Decimal

from pydantic_ai.messages import ModelMessage, ModelResponse

from bot.agents.metering import SpendCheck
from bot.core.budgets.caps import (
    HOUR,
    Cap,
    Unit,
    Window,
    day_of,
    exhausted,
    first_reached,
    refusal,
    warning_words,
    what_of,
)
from bot.core.budgets.limits import BudgetLimits, Limits
from bot.core.context import CoreContext
from bot.core.errors import UserError
from bot.core.runs.announcements import Announcement
from bot.i18n import Words
from bot.records import Run, Session
from storage.db import Connection
from storage.usage import DaySpent, Payer, Spend, Spent


class OverBudget(UserError):
    status = "forbidden"


def spend_of(messages: Sequence[ModelMessage]) -> Spend:
    """What a step's responses cost; a response nobody could price is counted as unpriced, not as free."""
    responses = [message for message in messages if isinstance(message, ModelResponse)]
    return Spend(
        requests=len(responses),
        input_tokens=sum(response.usage.input_tokens for response in responses),
        output_tokens=sum(response.usage.output_tokens for response in responses),
        cost=sum((response.usage.cost or Decimal(0) for response in responses), Decimal(0)),
        unpriced_requests=sum(response.usage.cost is None for response in responses),
    )


_PAYERS_KEPT = 4096  # sessions whose paying agent is remembered
NOTHING_SPENT = DaySpent(Spent(), Spent(), Spent())


def _plus(spent: Spent, spend: Spend) -> Spent:
    return Spent(spent.tokens + spend.input_tokens + spend.output_tokens, spent.cost + spend.cost)


class Budgets:
    def __init__(self, ctx: CoreContext, limits: BudgetLimits) -> None:
        self._ctx = ctx
        self._limits = limits
        self._payer_agents: OrderedDict[str, str] = OrderedDict()  # session key → the agent paying for its runs

    async def check(self, payer: Payer, *, top_level: bool) -> None:
        """Refuse early a run the admission would refuse.

        Early is before a thread is opened for it."""
        await self._refuse_over(await self._admission_caps(None, payer, top_level))

    async def admit(self, tx: Connection, run: Run) -> None:
        """Refuse ``run`` over any cap (:class:`OverBudget`), else count it in today's usage; inside the
        transaction that persists it, so runs that arrive together cannot all pass a cap."""
        payer = await self._payer(tx, run)
        await self._refuse_over(await self._admission_caps(tx, payer, run.parent_run_id is None))
        await self._ctx.repos.usage.add(tx, day_of(self._ctx.clock()), payer, Spend(runs=1))

    def meter(self, run: Run) -> SpendCheck:
        """The check before each of the run's model requests: the daily caps its spending counts against."""

        async def check() -> str | None:
            cap = first_reached(await self._daily_caps(await self._payer(None, run)))
            return exhausted(cap) if cap is not None else None

        return check

    async def record(self, tx: Connection, run: Run, session: Session, messages: Sequence[ModelMessage]) -> bool:
        """Add a step's responses to today's usage; queue the day's 80% warning of a member's daily cap the step
        crossed. True when an outbox row was added."""
        spend = spend_of(messages)
        if spend.requests == 0:
            return False
        payer = await self._payer(tx, run)
        now = self._ctx.clock()
        day = day_of(now)
        usage = self._ctx.repos.usage
        await usage.add(tx, day, payer, spend)
        limits = await self._limits.effective(payer.guild_id)
        if payer.user_id is None or not self._member_daily(limits, Spent()):  # no cap to warn of: nothing to read
            return False
        spent = await self._spent(payer)
        caps = self._member_daily(limits, _plus(spent.member, spend))
        warned = False
        for cap in caps:
            if cap.near and await usage.warn_once(
                tx, day=day, guild_id=payer.guild_id, user_id=payer.user_id, cap=cap.key, now=now
            ):
                words = warning_words(cap, payer.user_id, now)
                await self._ctx.repos.outbox.enqueue(
                    tx,
                    key=f"budget-warning:{day}:{payer.guild_id or 0}:{payer.user_id}:{cap.key}",
                    run_id=None,
                    channel_id=run.channel_id,
                    payload_json=_notice(words, run, session, payer.user_id).model_dump_json(),
                    now=now,
                )
                warned = True
        return warned

    async def caps(self, payer: Payer, *, top_level: bool = True) -> list[Cap]:
        """Every cap a run of ``payer`` counts against now, with its use (for ``/usage``)."""
        return await self._admission_caps(None, payer, top_level)

    async def _payer(self, tx: Connection | None, run: Run) -> Payer:
        """Whose budgets the run's spending counts against: its member, its server, its budget owner's agent.

        A session's budget owner never changes: the last sessions' are remembered."""
        agent_id = self._payer_agents.get(run.session_key)
        if agent_id is None:
            agent_id = await self._ctx.repos.usage.payer_agent_of(tx, run.session_key)
            self._payer_agents[run.session_key] = agent_id
            if len(self._payer_agents) > _PAYERS_KEPT:
                self._payer_agents.popitem(last=False)
        return Payer(run.guild_id, run.requester_user_id, agent_id)

    async def _refuse_over(self, caps: list[Cap]) -> None:
        if (cap := first_reached(caps)) is not None:
            raise OverBudget(refusal(cap, self._ctx.clock()))

    async def _spent(self, payer: Payer) -> DaySpent:
        return await self._ctx.repos.usage.day_spent(day_of(self._ctx.clock()), payer)

    async def _admission_caps(self, tx: Connection | None, payer: Payer, top_level: bool) -> list[Cap]:
        limits = await self._limits.effective(payer.guild_id)
        caps = await self._run_caps(tx, payer, limits, top_level)
        return caps + await self._daily_caps(payer, limits)

    async def _run_caps(self, tx: Connection | None, payer: Payer, limits: Limits, top_level: bool) -> list[Cap]:
        """The hourly run caps, and the cap on a member's runs in progress.

        The second counts only for a run a member starts themselves."""
        usage, values, since = self._ctx.repos.usage, limits.values, self._ctx.clock() - HOUR
        caps = []
        hourly: list[tuple[str, Words, int | None]] = []
        if payer.user_id is not None:
            hourly.append(("member_runs_per_hour", what_of("member_runs_per_hour"), payer.user_id))
        if payer.guild_id is not None:
            hourly.append(("server_runs_per_hour", what_of("server_runs_per_hour"), None))
        for key, what, user_id in hourly:
            if values[key]:
                count, oldest = await usage.runs_since(tx, since, guild_id=payer.guild_id, user_id=user_id)
                frees_at = oldest + HOUR if oldest is not None else None
                caps.append(Cap(key, what, "runs", values[key], Decimal(count), Window.HOUR, frees_at))
        if payer.user_id is not None and top_level and values["member_concurrent_runs"]:
            live = await usage.live_top_level(tx, guild_id=payer.guild_id, user_id=payer.user_id)
            limit = values["member_concurrent_runs"]
            what = what_of("member_concurrent_runs")
            caps.append(Cap("member_concurrent_runs", what, "runs", limit, Decimal(live), Window.LIVE))
        return caps

    async def _daily_caps(self, payer: Payer, limits: Limits | None = None) -> list[Cap]:
        """The daily caps ``payer``'s spending counts against, with today's use.

        None set: today's use is not read."""
        limits = limits or await self._limits.effective(payer.guild_id)
        if not self._daily(payer, limits, NOTHING_SPENT):
            return []
        return self._daily(payer, limits, await self._spent(payer))

    def _daily(self, payer: Payer, limits: Limits, spent: DaySpent) -> list[Cap]:
        caps = self._member_daily(limits, spent.member) if payer.user_id is not None else []
        if payer.guild_id is not None:
            caps += _tokens_and_cost(limits.values, "server", spent.server)
        agent = self._ctx.config.agents.list.get(payer.agent_id)
        if agent is None:
            return caps
        own: list[tuple[str, Unit, Decimal, Decimal]] = [
            ("tokens_per_day", "tokens", Decimal(agent.tokens_per_day), Decimal(spent.agent.tokens)),
            ("cost_per_day_usd", "usd", agent.cost_per_day_usd, spent.agent.cost),
        ]
        for key, unit, limit, used in own:
            if limit:
                setting = f"agents.list.{payer.agent_id}.{key}"
                caps.append(Cap(setting, what_of(setting), unit, limit, used, Window.DAY))
        if agent.runtime_profile is not None:
            cents = self._ctx.config.runtime_profiles[agent.runtime_profile].max_cost_per_day_cents
            key = f"runtime_profiles.{agent.runtime_profile}.max_cost_per_day_cents"
            what = what_of(f"agents.list.{payer.agent_id}.cost_per_day_usd")
            caps.append(Cap(key, what, "usd", Decimal(cents) / 100, spent.agent.cost, Window.DAY, zeroclaw=True))
        return caps

    @staticmethod
    def _member_daily(limits: Limits, spent: Spent) -> list[Cap]:
        return _tokens_and_cost(limits.values, "member", spent)


def _tokens_and_cost(values: dict[str, Decimal], scope: str, spent: Spent) -> list[Cap]:
    rows: list[tuple[str, Unit, Decimal]] = [
        (f"{scope}_tokens_per_day", "tokens", Decimal(spent.tokens)),
        (f"{scope}_cost_per_day_usd", "usd", spent.cost),
    ]
    return [Cap(key, what_of(key), unit, values[key], used, Window.DAY) for key, unit, used in rows if values[key]]


def _notice(words: Words, run: Run, session: Session, user_id: int) -> Announcement:
    """A warning in the server's language, mentioning only the member it is for."""
    return Announcement(
        kind="reply",
        status=run.status,
        status_line="budget warning",
        body=str(words),
        words=words.as_data(),
        guild_id=run.guild_id,
        agent_label=session.label or session.agent_id,
        run_id=run.id,
        session_key=session.key,
        mention_user_id=user_id,
    )
