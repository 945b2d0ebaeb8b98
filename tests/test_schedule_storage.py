"""The schedules table: a slot is claimed once (compare-and-set), skipping moves the claim without a firing, and
names are unique among config.toml's schedules and within a server's."""

from __future__ import annotations

import pytest

from bot.records import ScheduleSource, ScheduleSpec
from storage.db import Database
from storage.repositories import Repositories
from tests import stores

SPEC = ScheduleSpec("digest", "0 * * * *", "UTC", "main", "Summarise", 42)


@pytest.fixture
async def repos(tmp_path):
    db = await Database.open(stores.database(tmp_path / "s.sqlite3"))
    yield Repositories.over(db)
    await db.close()


async def add(repos, spec=SPEC, source=ScheduleSource.SLASH, guild_id=1, now=1000.0) -> int:
    async with repos.db.transaction() as tx:
        return await repos.schedules.add(tx, spec, source=source, guild_id=guild_id, created_by=7, now=now)


async def claim(repos, schedule_id, through, run_id=None) -> bool:
    async with repos.db.transaction() as tx:
        return await repos.schedules.claim(tx, schedule_id, through, run_id=run_id)


async def test_a_slot_is_claimed_once_and_never_an_earlier_one(repos):
    schedule_id = await add(repos)
    assert (await repos.schedules.get(schedule_id)).claimed_through == 1000.0  # no slot before it was added

    assert await claim(repos, schedule_id, 3600.0, "run-1")
    assert not await claim(repos, schedule_id, 3600.0, "run-2")
    assert not await claim(repos, schedule_id, 1800.0, "run-3")
    stored = await repos.schedules.get(schedule_id)
    assert (stored.claimed_through, stored.last_fired_at, stored.last_run_id) == (3600.0, 3600.0, "run-1")


async def test_skipping_moves_the_claim_but_records_no_firing(repos):
    schedule_id = await add(repos)
    assert await claim(repos, schedule_id, 3600.0, "run-1")
    assert await claim(repos, schedule_id, 90000.0)
    stored = await repos.schedules.get(schedule_id)
    assert (stored.claimed_through, stored.last_fired_at, stored.last_run_id) == (90000.0, 3600.0, "run-1")


async def test_redefine_and_remove(repos):
    schedule_id = await add(repos)
    changed = ScheduleSpec("digest", "30 * * * *", "Europe/Madrid", "main", "Summarise more", 43)
    async with repos.db.transaction() as tx:
        await repos.schedules.redefine(tx, schedule_id, changed, 5000.0)
    stored = await repos.schedules.get(schedule_id)
    assert (stored.spec, stored.claimed_through, stored.source) == (changed, 5000.0, ScheduleSource.SLASH)
    async with repos.db.transaction() as tx:
        assert await repos.schedules.remove(tx, schedule_id)
        assert not await repos.schedules.remove(tx, schedule_id)
    assert await repos.schedules.all() == []


async def test_names_are_unique_in_config_and_within_a_server(repos):
    await add(repos, source=ScheduleSource.CONFIG, guild_id=None)
    await add(repos, guild_id=1)
    await add(repos, guild_id=2)
    for source, guild_id in ((ScheduleSource.CONFIG, None), (ScheduleSource.SLASH, 1)):
        with pytest.raises(stores.INTEGRITY_ERRORS):
            await add(repos, source=source, guild_id=guild_id)
    assert [(s.source, s.guild_id) for s in await repos.schedules.all()] == [
        (ScheduleSource.CONFIG, None),
        (ScheduleSource.SLASH, 1),
        (ScheduleSource.SLASH, 2),
    ]
