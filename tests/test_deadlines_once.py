"""Two processes on one database each rebuild every deadline's timer from it, so each deadline fires in both; what
it does happens once: one farewell and one archive of an idle binding's thread, one archiving of a finished
session, one timeout of an approval (one notice, one resumed turn), one run per schedule slot; two retention passes
at once delete each row once and count it once; a delegate task's deadline expired by two processes at once is
stopped by one.

Each "process" is a core with its own database connections (and, for threads, its own discord.py client logged in
over REST to the fake Discord); a second core started after the first rebuilds the same timers from the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from typing import TypeVar

import discord
import structlog
from structlog.testing import capture_logs

from bot.agents.tool_gate import TIMED_OUT
from bot.core.tools.delegate_records import DelegateRecords
from bot.discord_adapter.threads import DiscordThreads
from bot.records import ApprovalStatus, Binding, RunStatus, TaskStatus
from storage.db import Database
from storage.repositories import Repositories
from storage.retention import RetentionRepository
from tests import stores
from tests.core_support import ARCHIVING, ScriptedModels, chat_and_wait, running_core, spawned_and_done, text
from tests.db_views import cron_runs, delegate_tasks
from tests.harness import BOT_TOKEN
from tests.polling import eventually, stays
from tests.retention_data import KEY_COLUMNS, busy
from tests.test_approvals import ASKING, finished, paused_chat, pending_of
from tests.test_delegate import CONFIG as DELEGATING
from tests.test_delegate import Caller, Held, delegate, models
from tests.test_mcp_tools import ToolUser, recorded
from tests.test_retention import due, keys, retention
from tests.test_schedules import Clock, Researcher, core

CONFIG = ARCHIVING + "[session.thread_bindings]\narchive_on_expiry = true\n"
MODELS = ScriptedModels(m=text("answer"))
T = TypeVar("T")
SETTLE = 1.0  # after the winner's effect, how long the other process's firing gets to show a second one


@contextlib.asynccontextmanager
async def rest_client(fake_discord) -> AsyncIterator[discord.Client]:
    discord.http.Route.BASE = fake_discord.api_base_url
    client = discord.Client(intents=discord.Intents.none())
    await client.login(BOT_TOKEN)
    try:
        yield client
    finally:
        await client.close()


def events(logs: list[dict], name: str) -> list[dict]:
    return [line for line in logs if line["event"] == name]


async def test_an_idle_binding_expiring_in_two_processes_says_farewell_and_archives_its_thread_once(
    fake_discord, tmp_path
):
    guild = fake_discord.add_guild("Shared Guild")
    channel = fake_discord.add_text_channel(guild, "general")
    thread = fake_discord.add_thread(channel, "researcher session")
    config = CONFIG.format(minutes=60)
    async with (
        rest_client(fake_discord) as client_a,
        rest_client(fake_discord) as client_b,
        running_core(tmp_path, MODELS, config, threads=DiscordThreads(client_a)) as a,
    ):
        accepted = await spawned_and_done(a)
        now = time.time()
        binding = Binding(thread.id, channel.id, guild.id, accepted.session_key, 7, now, now, 2.0, 0)
        await a.core.bindings.bind(binding)  # idle in 2 s
        async with running_core(tmp_path, MODELS, config, threads=DiscordThreads(client_b)) as b:
            assert await b.bindings.get(thread.id) == binding  # B rebuilt the same deadline from the database
            farewell = await fake_discord.wait_for_message(thread, lambda m: "Session ended" in m["content"])
            await stays(
                lambda: (
                    len(fake_discord.channel_messages(thread)) == 1
                    and len(fake_discord.requests_matching("PATCH", rf"^/channels/{thread.id}$")) <= 1
                ),
                for_seconds=SETTLE,
                describe="no second farewell nor archive",
            )
            assert await a.bindings.get(thread.id) is None

    assert "after <1m of inactivity" in farewell["content"]
    assert [m["content"] for m in fake_discord.channel_messages(thread)] == [farewell["content"]]
    archives = fake_discord.requests_matching("PATCH", rf"^/channels/{thread.id}$")
    assert [request.json for request in archives] == [{"archived": True}]


async def test_a_session_archive_deadline_firing_in_two_processes_archives_it_once(tmp_path):
    config = CONFIG.format(minutes=0.04)  # 2.4 s after its run ends
    with capture_logs(processors=[structlog.contextvars.merge_contextvars]) as logs:
        async with running_core(tmp_path, MODELS, config) as a:
            accepted = await spawned_and_done(a)
            assert (await a.sessions.get(accepted.session_key)).archive_at is not None
            async with running_core(tmp_path, MODELS, config):

                async def archived() -> float | None:
                    return (await a.sessions.get(accepted.session_key)).archived_at

                await eventually(archived, timeout=10, describe="the session to be archived")
                await stays(
                    lambda: len(events(logs, "session_archived")) <= 1, for_seconds=SETTLE, describe="one archive"
                )

    [line] = events(logs, "session_archived")
    assert line["session_key"] == accepted.session_key


async def test_an_approval_timing_out_in_two_processes_denies_once_and_the_run_goes_on_once(tmp_path, calls):
    config = ASKING.replace('model = "test/main"\n', 'model = "test/main"\napproval_timeout_minutes = 0.04\n')
    user = ToolUser(("calc__shout", {"text": "hi"}))
    models = ScriptedModels(main=user)
    notices: list[str] = []
    async with running_core(tmp_path, models, config) as a:
        run_id = await paused_chat(a)  # the deadline is 2.4 s away
        async with running_core(tmp_path, models, config) as b:
            a.add_approval_listener(lambda: notices.append("a"))  # what posts or edits the request in Discord
            b.add_approval_listener(lambda: notices.append("b"))
            run = await finished(a, run_id)
            await stays(lambda: len(notices) <= 1, for_seconds=SETTLE, describe=lambda: f"one notice: {notices}")
            [decided] = await pending_of(a, run_id)
            announcements = await a.outbox.for_run(run_id)

    assert decided.status is ApprovalStatus.TIMED_OUT
    assert len(notices) == 1  # one process settled it: one edit of the request to "nobody decided in time"
    assert run.status is RunStatus.COMPLETED
    assert user.results == [TIMED_OUT]  # the paused turn resumed once, with the refusal
    assert recorded(calls) == []
    assert len(announcements) == 1


async def test_a_schedule_slot_fired_by_two_processes_runs_once(tmp_path):
    clock, researcher = Clock("2024-01-01 10:30"), Researcher()
    async with core(tmp_path, clock, researcher) as a, core(tmp_path, clock, researcher) as b:
        clock.set("2024-01-01 11:00:00")
        fired = await asyncio.gather(a.schedules.fire_due(1), b.schedules.fire_due(1))
        assert len([run_id for run_id in fired if run_id is not None]) == 1
        await asyncio.gather(a.core.dispatch.wait_idle(), b.core.dispatch.wait_idle())
        assert await cron_runs(a) == [("[cron:1 digest] Summarise the hour", "completed")]
    assert researcher.prompts == ["[cron:1 digest] Summarise the hour"]


class Turns:
    """Two passes run batch about batch: each batch (a transaction) starts when the other pass has run one, or ended.
    Left to themselves on a busy machine, one pass can take the write lock for every batch while the other waits."""

    def __init__(self) -> None:
        self._next = 0
        self._ended: set[int] = set()
        self._changed = asyncio.Condition()

    async def batch(self, who: int, work: Awaitable[T]) -> T:
        async with self._changed:
            await self._changed.wait_for(lambda: self._next == who or 1 - who in self._ended)
        try:
            return await work
        finally:
            async with self._changed:
                self._next = 1 - who
                self._changed.notify_all()

    async def taken(self, who: int, work: Awaitable[T]) -> T:
        try:
            return await work
        finally:
            async with self._changed:
                self._ended.add(who)
                self._changed.notify_all()


class TakingTurns(RetentionRepository):
    def __init__(self, db: Database, turns: Turns, who: int) -> None:
        super().__init__(db)
        self._turns, self._who = turns, who

    async def prune_sessions(self, cutoff: float, limit: int) -> Counter[str]:
        return await self._turns.batch(self._who, super().prune_sessions(cutoff, limit))

    async def prune_turns(self, cutoff: float, limit: int) -> Counter[str]:
        return await self._turns.batch(self._who, super().prune_turns(cutoff, limit))

    async def prune_transcripts(self, cutoff: float, limit: int) -> Counter[str]:
        return await self._turns.batch(self._who, super().prune_transcripts(cutoff, limit))

    async def prune_outbox(self, cutoff: float, limit: int) -> Counter[str]:
        return await self._turns.batch(self._who, super().prune_outbox(cutoff, limit))


async def test_two_retention_passes_at_once_delete_each_row_once_and_count_it_once(tmp_path):
    rows = busy(trees=300, history=300)
    path = stores.database(tmp_path / "retention.sqlite3")
    first = await Database.open(path)
    second = await Database.open(path)
    try:
        await rows.write(first)
        turns = Turns()
        one, two = await asyncio.gather(
            turns.taken(0, retention(first, TakingTurns(first, turns, 0), batch_size=50).prune()),
            turns.taken(1, retention(second, TakingTurns(second, turns, 1), batch_size=50).prune()),
        )
        assert one.deleted and two.deleted  # both passes did delete: they ran together
        assert one.deleted + two.deleted == due(rows)
        for table in KEY_COLUMNS:
            assert await keys(first, table) == rows.kept[table], table
        assert await stores.foreign_key_violations(first) == []
    finally:
        await first.close()
        await second.close()


async def test_a_delegate_task_expired_by_two_processes_at_once_is_timed_out_and_stopped_by_one(tmp_path):
    held = Held()
    caller = Caller(delegate(agent="researcher", prompt="long job", background=True))
    async with running_core(tmp_path, models(caller, researcher=held), DELEGATING) as a:
        await chat_and_wait(a)
        await held.started.wait()
        [task_id] = [task.task_id for task in await delegate_tasks(a)]
        other = await Database.open(stores.database(tmp_path / "core.sqlite3"))
        try:
            expired = await asyncio.gather(
                *(
                    DelegateRecords(replace(a.core.ctx, repos=Repositories.over(db))).expire(task_id, 30)
                    for db in (a._db, other)
                )
            )
        finally:
            await other.close()
        [status] = [task.status for task in await delegate_tasks(a)]
        held.release.set()
    assert len([task for task in expired if task is not None]) == 1  # only that process goes on to stop its run
    assert status == TaskStatus.TIMED_OUT
