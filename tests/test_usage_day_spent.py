"""Today's spending the daily caps compare against, read from the usage ledger: the member's in the server, the
server's, and the agent's across every server (a read with parameters bound by name)."""

from __future__ import annotations

from decimal import Decimal

from storage.db import Database
from storage.repositories import Repositories
from storage.usage import DaySpent, Payer, Spend, Spent
from tests import stores

DAY = "2026-12-01"


async def test_day_spent_sums_the_members_the_servers_and_the_agents_rows_of_the_day(tmp_path):
    db = await Database.open(stores.database(tmp_path / "usage.sqlite3"))
    repos = Repositories.over(db)
    rows = [
        (DAY, Payer(10, 7, "researcher"), Spend(input_tokens=100, output_tokens=20, cost=Decimal("0.5"))),
        (DAY, Payer(10, 8, "main"), Spend(input_tokens=1000, cost=Decimal("1"))),  # another member, same server
        (DAY, Payer(99, 7, "researcher"), Spend(input_tokens=3, cost=Decimal("0.25"))),  # another server
        ("2026-11-30", Payer(10, 7, "researcher"), Spend(input_tokens=50_000)),  # yesterday
    ]
    try:
        async with db.transaction() as tx:
            for day, payer, spend in rows:
                await repos.usage.add(tx, day, payer, spend)
        spent = await repos.usage.day_spent(DAY, Payer(10, 7, "researcher"))
    finally:
        await db.close()
    assert spent == DaySpent(
        member=Spent(120, Decimal("0.5")), server=Spent(1120, Decimal("1.5")), agent=Spent(123, Decimal("0.75"))
    )
