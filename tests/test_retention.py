"""Retention: a pass deletes what ``[retention]`` says — archived sessions (leaves first) with everything hanging
off them, transcript rows of runs that ended before the cutoff, finished outbox rows — in batches of
``batch_size`` rows, and nothing else; usage and audit rows outlive what they were about."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from dataclasses import replace

from structlog.testing import capture_logs

from bot.config import RetentionConfig, parse_config
from bot.core.jobs.retention import Retention
from bot.core.orchestrator import Orchestrator
from storage.db import Database
from storage.repositories import Repositories
from storage.retention import RetentionRepository
from tests import stores
from tests.core_support import ScriptedModels, context
from tests.polling import eventually, stays
from tests.retention_data import DAY, KEY_COLUMNS, NOW, OLD, RECENT, Rows, busy

CUTOFF = NOW - 30 * DAY


async def filled(tmp_path, rows: Rows) -> Database:
    db = await Database.open(stores.database(tmp_path / "retention.sqlite3"))
    await rows.write(db)
    return db


def retention(db: Database, repository: RetentionRepository | None = None, **settings: int) -> Retention:
    repos = replace(Repositories.over(db), retention=repository or RetentionRepository(db))
    config = parse_config("").model_copy(update={"retention": RetentionConfig(**settings)})
    return Retention(context(repos, config, lambda: NOW))


async def keys(db: Database, table: str) -> set[object]:
    return {row[0] for row in await db.fetch_all(f"SELECT {KEY_COLUMNS[table]} FROM {table}")}


def due(rows: Rows) -> Counter[str]:
    return +Counter({table: len(rows.rows[table]) - len(rows.kept[table]) for table in KEY_COLUMNS})


async def test_a_pass_over_20k_old_rows_deletes_what_the_policy_says_and_nothing_else(tmp_path):
    rows = busy(trees=400, history=600)  # bench/retention_stall.py times a pass over 100k
    assert rows.total() >= 20_000
    db = await filled(tmp_path, rows)
    try:
        report = await retention(db).prune()
        for table in KEY_COLUMNS:
            assert await keys(db, table) == rows.kept[table], table
        assert report.deleted == due(rows)
        assert report.deleted["sessions"] == 3 * 400 and report.deleted["runs"] == 3 * 400 + 600  # and old turns
        first_turn_and_newer = await db.fetch_all("SELECT id FROM runs WHERE session_key = 'main'")
        assert len(first_turn_and_newer) == 3  # the sub-agents that still stay name the first; one recent; one live
        dependents = report.deleted.total() - report.deleted["runs"] - report.deleted["sessions"]
        assert report.batches >= dependents / 500  # a batch deletes at most 500 rows besides sessions and runs
        assert {key for key in await keys(db, "sessions") if str(key).startswith("held:")} == {
            "held:parent-of-recent",
            "held:recent-child",
            "held:parent-of-live",
            "held:live-child",
            "held:pending-announcement",
            "held:bound",
            "held:queued",
            "held:followed-up",
            "held:follower",
            "held:unread-result",
            "held:ends-a-binding",
        }
        audit = await db.fetch_all("SELECT run_id FROM audit_log WHERE run_id NOT IN (SELECT id FROM runs)")
        assert len(audit) == 400  # the kills of pruned runs still name them
        assert await stores.foreign_key_violations(db) == []
        assert (await retention(db).prune()).deleted == Counter()
    finally:
        await db.close()


async def test_a_tree_goes_leaves_first_one_session_a_batch(tmp_path):
    rows = Rows()  # linked by requester only; the root, archived first, is the oldest
    for index, (key, requester) in enumerate((("a-root", None), ("b-middle", "a-root"), ("c-leaf", "b-middle"))):
        rows.finished_session(
            key, archived_at=OLD + index, at=OLD, keep=False, requester=requester, parent_run=None, transcripts=1
        )
    db = await filled(tmp_path, rows)
    repository = RetentionRepository(db)
    try:
        gone, left = [], {"a-root", "b-middle", "c-leaf"}
        while (deleted := +await repository.prune_sessions(CUTOFF, 1)).total():
            assert deleted.total() - deleted["runs"] - deleted["sessions"] <= 1
            now_left = await keys(db, "sessions")
            gone.append(left - now_left)
            left = now_left
        assert [keys for keys in gone if keys] == [{"c-leaf"}, {"b-middle"}, {"a-root"}]
        assert await keys(db, "transcript_messages") == set()
    finally:
        await db.close()


async def test_a_session_with_more_rows_than_a_batch_goes_over_several(tmp_path):
    rows = Rows()
    rows.finished_session("big", archived_at=OLD, at=OLD, keep=False, requester=None, parent_run=None, transcripts=7)
    db = await filled(tmp_path, rows)
    repository = RetentionRepository(db)
    try:
        assert await repository.prune_sessions(CUTOFF, 5) == Counter({"transcript_messages": 5})
        assert await keys(db, "sessions") == {"big"}
        assert +await repository.prune_sessions(CUTOFF, 5) == Counter(
            {"transcript_messages": 2, "outbox": 1, "status_messages": 1, "runs": 1, "sessions": 1}
        )
    finally:
        await db.close()


class Spy(RetentionRepository):
    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.outbox_batches: list[int] = []
        self.first_batch = asyncio.Event()

    async def prune_outbox(self, cutoff: float, limit: int) -> Counter[str]:
        deleted = await super().prune_outbox(cutoff, limit)
        self.outbox_batches.append(deleted["outbox"])
        self.first_batch.set()
        return deleted


async def test_a_pass_deletes_batch_size_rows_at_a_time(tmp_path):
    rows = Rows()
    for _ in range(25):
        rows.outbox(None, OLD, keep=False)
    db = await filled(tmp_path, rows)
    spy = Spy(db)
    try:
        report = await retention(db, spy, batch_size=10).prune()
        assert spy.outbox_batches == [10, 10, 5, 0]
        assert (report.batches, report.deleted) == (3, Counter({"outbox": 25}))
    finally:
        await db.close()


async def test_a_live_write_goes_between_two_batches(tmp_path):
    rows = Rows()
    for _ in range(1000):
        rows.outbox(None, OLD, keep=False)
    db = await filled(tmp_path, rows)
    spy = Spy(db)
    try:
        pruning = asyncio.create_task(retention(db, spy, batch_size=10).prune())
        await asyncio.wait_for(spy.first_batch.wait(), 10)
        before = len(spy.outbox_batches)
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO meta (key, value) VALUES ('live', 'write')")
        waited = len(spy.outbox_batches) - before
        assert (await pruning).batches == 100
        assert before + waited < 100 and waited <= 1  # at most the batch in progress, never the rest of the pass
    finally:
        await db.close()


class Broken(RetentionRepository):
    async def prune_sessions(self, cutoff: float, limit: int) -> Counter[str]:
        raise sqlite3.IntegrityError("FOREIGN KEY constraint failed")


async def test_a_kind_that_fails_is_logged_and_the_others_still_go(tmp_path):
    rows = Rows()
    rows.finished_session("old", archived_at=OLD, at=OLD, keep=True, requester=None, parent_run=None)
    db = await filled(tmp_path, rows)
    try:
        with capture_logs() as logs:
            report = await retention(db, Broken(db)).prune()
        assert report.deleted == Counter({"transcript_messages": 8, "outbox": 1})
        assert [log["kind"] for log in logs if log["event"] == "retention_kind_failed"] == ["prune_sessions"]
        assert await keys(db, "sessions") == {"old"}
    finally:
        await db.close()


async def test_zero_days_keeps_that_kind_forever(tmp_path):
    rows = busy(trees=3, history=5)
    db = await filled(tmp_path, rows)
    try:
        report = await retention(db, archived_sessions_days=0, transcripts_days=0).prune()
        for table in KEY_COLUMNS:
            expected = rows.kept[table] if table == "outbox" else {row[0] for row in rows.rows[table]}
            assert await keys(db, table) == expected, table
        assert set(report.deleted) == {"outbox"}
    finally:
        await db.close()


async def test_the_core_prunes_at_start_up_unless_everything_is_kept_forever(tmp_path):
    rows = Rows()  # no live run: start-up would settle it as interrupted
    main = rows.session("main", keep=True, archived_at=None, depth=0)
    turn = rows.run(main, keep=True, ended_at=OLD)
    rows.tree("old", archived_at=OLD, keep=False, requester=main, parent_run=turn)
    rows.tree("recent", archived_at=RECENT, keep=True, requester=main, parent_run=turn)
    db = await filled(tmp_path, rows)
    forever = "[retention]\narchived_sessions_days = 0\ntranscripts_days = 0\noutbox_days = 0\nmemory_days = 0\n"
    try:
        for text, events in ((forever, ["retention_off"]), ("", ["retention_pass"])):
            with capture_logs() as logs:
                core = Orchestrator(parse_config(text), db, ScriptedModels(), clock=lambda: NOW)
                await core.start()
                await eventually(
                    lambda events=events: any(log["event"] in events for log in logs),
                    timeout=10,
                    describe=f"{events} logged",
                )
                await core.close()
            assert [log["event"] for log in logs if log["event"].startswith("retention")] == events
        assert await keys(db, "sessions") == rows.kept["sessions"]
    finally:
        await db.close()


async def test_a_batch_never_cuts_a_run_transcript_in_two(tmp_path):
    rows = Rows()  # a live conversation: a turn read between two batches must not start inside a run
    main = rows.session("main", keep=True, archived_at=None, depth=0)
    first = rows.run(main, keep=True, ended_at=OLD)
    rows.transcript(main, first, OLD, keep=False, count=3)  # a call, its return, the answer
    second = rows.run(main, keep=True, ended_at=OLD)
    rows.transcript(main, second, OLD, keep=False, count=3)
    db = await filled(tmp_path, rows)
    try:
        deleted = await RetentionRepository(db).prune_transcripts(CUTOFF, 2)
        left = [row[0] for row in await db.fetch_all("SELECT run_id FROM transcript_messages ORDER BY id")]
        assert (deleted, left) == (Counter({"transcript_messages": 3}), [second] * 3)
    finally:
        await db.close()


class Slow(RetentionRepository):
    """A repository whose first outbox batch waits until released, so a pass stays in progress."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.passes = 0
        self.release = asyncio.Event()

    async def prune_sessions(self, cutoff: float, limit: int) -> Counter[str]:
        deleted = await super().prune_sessions(cutoff, limit)
        if not deleted:  # the last batch of this kind: one per pass
            self.passes += 1
        return deleted

    async def prune_outbox(self, cutoff: float, limit: int) -> Counter[str]:
        await self.release.wait()
        return await super().prune_outbox(cutoff, limit)


async def test_a_timer_firing_while_a_pass_still_goes_starts_no_second_pass(tmp_path):
    rows = Rows()
    rows.outbox(None, OLD, keep=False)
    db = await filled(tmp_path, rows)
    slow = Slow(db)
    pruning = retention(db, slow)
    try:
        await pruning._launch()  # the timer, while the pass it started waits on its outbox batch
        await eventually(lambda: slow.passes == 1, timeout=10, describe="a first pass under way")
        with capture_logs() as logs:
            await pruning._launch()
            await stays(  # time for a second pass to get as far as the first
                lambda: slow.passes == 1, for_seconds=0.05, describe="no second pass"
            )
            slow.release.set()
            await eventually(
                lambda: any(log["event"] == "retention_pass" for log in logs), timeout=10, describe="a pass"
            )
        assert slow.passes == 1
        events = [log["event"] for log in logs if log["event"].startswith("retention")]
        assert events == ["retention_pass_skipped", "retention_pass"]
        assert await keys(db, "outbox") == set()
    finally:
        await db.close()
