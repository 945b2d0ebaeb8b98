"""Usage ledger repository: what each member spent with each agent in each server, by UTC day (``usage_daily``),
the runs counted by the hour, and the 80% warnings already given.

The ledger is written in the transaction that records the spending (a run's creation, a step's responses) and is
never pruned with the runs and transcripts it came from. No server or no member is stored as 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from bot.records import Delegation
from storage.db import Connection, Database, Row
from storage.runs import LIVE_SQL, in_server

NANO_USD = Decimal(1_000_000_000)


@dataclass(frozen=True)
class Payer:
    """Whose budgets a run's spending counts against, and the ledger row it goes to.

    Its member (none for a job from config.toml), its server (none in DMs) and its agent: for a session that shares
    its caller's budget, the agent of the budget's owner."""

    guild_id: int | None
    user_id: int | None
    agent_id: str


@dataclass(frozen=True)
class Spend:
    """What one step or one run adds to a day's row."""

    runs: int = 0
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)  # of the priced requests only
    unpriced_requests: int = 0  # responses whose price nobody knows (counted, not guessed)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def empty(self) -> bool:
        """No run started and no model request made."""
        return not (self.runs or self.requests)


def total(spends: Iterable[Spend]) -> Spend:
    spends = list(spends)
    return Spend(
        runs=sum(spend.runs for spend in spends),
        requests=sum(spend.requests for spend in spends),
        input_tokens=sum(spend.input_tokens for spend in spends),
        output_tokens=sum(spend.output_tokens for spend in spends),
        cost=sum((spend.cost for spend in spends), Decimal(0)),
        unpriced_requests=sum(spend.unpriced_requests for spend in spends),
    )


@dataclass(frozen=True)
class Spent:
    tokens: int = 0
    cost: Decimal = Decimal(0)


@dataclass(frozen=True)
class DaySpent:
    """Today's spending that the daily caps of one run compare against."""

    member: Spent
    server: Spent
    agent: Spent


@dataclass(frozen=True)
class UsageRow:
    day: str
    agent_id: str
    spend: Spend


_ADDED = ("runs", "requests", "input_tokens", "output_tokens", "cost_nanousd", "unpriced_requests")
_ADD = (
    f"INSERT INTO usage_daily (day, guild_id, user_id, agent_id, {', '.join(_ADDED)}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(day, guild_id, user_id, agent_id) DO UPDATE SET "
    + ", ".join(f"{name} = usage_daily.{name} + excluded.{name}" for name in _ADDED)
)


def _key(value: int | None) -> int:
    return value if value is not None else 0


def _usd(nano: int | None) -> Decimal:
    return Decimal(nano or 0) / NANO_USD


class UsageRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, tx: Connection, day: str, payer: Payer, spend: Spend) -> None:
        await tx.execute(
            _ADD,
            (
                day,
                _key(payer.guild_id),
                _key(payer.user_id),
                payer.agent_id,
                spend.runs,
                spend.requests,
                spend.input_tokens,
                spend.output_tokens,
                int(spend.cost * NANO_USD),
                spend.unpriced_requests,
            ),
        )

    async def day_spent(self, day: str, payer: Payer) -> DaySpent:
        guild, user, agent_id = _key(payer.guild_id), _key(payer.user_id), payer.agent_id
        row = await self._db.fetch_one(
            "SELECT "
            "SUM(CASE WHEN guild_id = ? AND user_id = ? THEN input_tokens + output_tokens END), "
            "SUM(CASE WHEN guild_id = ? AND user_id = ? THEN cost_nanousd END), "
            "SUM(CASE WHEN guild_id = ? THEN input_tokens + output_tokens END), "
            "SUM(CASE WHEN guild_id = ? THEN cost_nanousd END), "
            "SUM(CASE WHEN agent_id = ? THEN input_tokens + output_tokens END), "
            "SUM(CASE WHEN agent_id = ? THEN cost_nanousd END) "
            "FROM usage_daily WHERE day = ? AND (guild_id = ? OR agent_id = ?)",
            (guild, user, guild, user, guild, guild, agent_id, agent_id, day, guild, agent_id),
        )
        values = list(row) if row is not None else [None] * 6
        member, server, agent = (Spent(int(values[i] or 0), _usd(values[i + 1])) for i in (0, 2, 4))
        return DaySpent(member=member, server=server, agent=agent)

    async def _one(self, tx: Connection | None, sql: str, params: tuple[object, ...]) -> Row:
        """A one-row read through the transaction's connection, or of committed state without one."""
        row = await (tx or self._db).fetch_one(sql, params)
        assert row is not None
        return row

    async def payer_agent_of(self, tx: Connection | None, session_key: str) -> str:
        """The agent whose budgets a session's spending counts against.

        That is the owner of the budget it shares (:attr:`bot.records.Session.budget_key`), else its own. The
        session may have been inserted by this very transaction."""
        shared = ", ".join(f"'{kind.value}'" for kind in Delegation if kind.shares_budget)
        sql = (
            "SELECT COALESCE(owner.agent_id, s.agent_id) FROM sessions s LEFT JOIN sessions owner "
            f"ON owner.key = s.charged_to AND s.delegation IN ({shared}) WHERE s.key = ?"
        )
        return (await self._one(tx, sql, (session_key,)))[0]

    async def runs_since(
        self, tx: Connection | None, since: float, *, guild_id: int | None, user_id: int | None = None
    ) -> tuple[int, float | None]:
        """Runs created in a server after ``since``, and when the oldest was.

        By one member, when given."""
        server, server_params = in_server("guild_id", guild_id)
        member = " AND requester_user_id = ?" if user_id is not None else ""
        row = await self._one(
            tx,
            f"SELECT COUNT(*), MIN(created_at) FROM runs WHERE {server}{member} AND created_at > ?",
            (*server_params, *([user_id] if user_id is not None else []), since),
        )
        return row[0], row[1]

    async def live_top_level(self, tx: Connection | None, *, guild_id: int | None, user_id: int) -> int:
        """A member's live runs that they started themselves (their agents' children run inside those)."""
        server, server_params = in_server("guild_id", guild_id)
        sql = (
            f"SELECT COUNT(*) FROM runs WHERE {server} AND requester_user_id = ? AND parent_run_id IS NULL "
            f"AND status IN {LIVE_SQL}"
        )
        return int((await self._one(tx, sql, (*server_params, user_id)))[0])

    async def warn_once(
        self, tx: Connection, *, day: str, guild_id: int | None, user_id: int, cap: str, now: float
    ) -> bool:
        """Record that a member is warned about ``cap`` today; ``False`` when they already were."""
        changed = await tx.execute(
            "INSERT INTO budget_warnings (day, guild_id, user_id, cap, created_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (day, _key(guild_id), user_id, cap, now),
        )
        return changed == 1

    async def member_days(self, *, guild_id: int | None, user_id: int, since_day: str) -> list[UsageRow]:
        """A member's rows in a server from ``since_day`` on, by day and agent.

        For ``/usage``."""
        rows = await self._db.fetch_all(
            "SELECT day, agent_id, runs, requests, input_tokens, output_tokens, cost_nanousd, unpriced_requests "
            "FROM usage_daily WHERE guild_id = ? AND user_id = ? AND day >= ? ORDER BY day, agent_id",
            (_key(guild_id), user_id, since_day),
        )
        return [
            UsageRow(
                day=row["day"],
                agent_id=row["agent_id"],
                spend=Spend(
                    runs=row["runs"],
                    requests=row["requests"],
                    input_tokens=row["input_tokens"],
                    output_tokens=row["output_tokens"],
                    cost=_usd(row["cost_nanousd"]),
                    unpriced_requests=row["unpriced_requests"],
                ),
            )
            for row in rows
        ]
