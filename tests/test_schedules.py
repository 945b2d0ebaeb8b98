"""Scheduled agent jobs in the core (FunctionModel, a clock the test moves): each firing is a top-level run of
the schedule's agent in a fresh main session, announced once in its channel; each slot fires exactly once — a
second timer, a restart, two restarts — and a missed slot fires once at start-up unless it is older than the
grace, when it is skipped."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import structlog
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from structlog.testing import capture_logs

from bot.config import parse_config
from bot.core.jobs.schedules import MISSED_SLOT_GRACE_SECONDS
from bot.core.orchestrator import Orchestrator
from bot.records import RunStatus, SessionKind, SessionRole, SpawnSite
from storage.db import Database
from tests import stores
from tests.core_support import Gate, ScriptedModels, user_texts
from tests.db_views import announcements, cron_runs, outbox_payloads, schedules
from tests.test_spawn_subagent import Agent

HOURLY = """
[agents.defaults]
model = "test/main"
[agents.list.main]
[agents.list.researcher]
model = "test/researcher"
[[schedules]]
name = "digest"
cron = "0 * * * *"
agent = "researcher"
prompt = "Summarise the hour"
channel_id = 500
"""


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


class Clock:
    def __init__(self, text: str) -> None:
        self.now = at(text)

    def set(self, text: str) -> None:
        self.now = at(text)

    def __call__(self) -> float:
        return self.now


class Researcher:
    """Answers every firing, remembering the prompts it was given."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, messages: list[ModelMessage], info) -> ModelResponse:
        self.prompts += user_texts(messages[-1])
        return ModelResponse(parts=[TextPart(f"summary {len(self.prompts)}")])


@contextlib.asynccontextmanager
async def core(tmp_path, clock: Clock, model, config: str = HOURLY) -> AsyncIterator[Orchestrator]:
    """A started core on ``tmp_path``'s database; opening it again is a restart."""
    db = await Database.open(stores.database(tmp_path / "core.sqlite3"))
    orchestrator = Orchestrator(parse_config(config), db, ScriptedModels(main=model, researcher=model), clock=clock)
    await orchestrator.start()
    try:
        yield orchestrator
        await orchestrator.core.dispatch.wait_idle()
    finally:
        await orchestrator.close()
        await db.close()


def events(logs: list[dict], name: str) -> list[dict]:
    return [line for line in logs if line["event"] == name]


async def test_a_firing_is_a_top_level_run_in_a_fresh_main_session_announced_in_its_channel(tmp_path):
    clock, researcher = Clock("2024-01-01 10:30"), Researcher()
    with capture_logs(processors=[structlog.contextvars.merge_contextvars]) as logs:
        async with core(tmp_path, clock, researcher) as orchestrator:
            assert await cron_runs(orchestrator) == []  # added at 10:30: the 10:00 slot was before it existed
            (schedule,) = await schedules(orchestrator)
            clock.set("2024-01-01 11:00:02")
            run_id = await orchestrator.schedules.fire_due(schedule[0])
            assert run_id is not None
            await orchestrator.core.dispatch.wait_idle()
            assert await orchestrator.schedules.fire_due(schedule[0]) is None
            run = await orchestrator.runs.get(run_id)
            session = await orchestrator.sessions.get(run.session_key)
            payloads = await outbox_payloads(orchestrator)
            (announcement,) = await announcements(orchestrator)

    assert researcher.prompts == [f"[cron:{schedule[0]} digest] Summarise the hour"]
    assert (run.status, run.parent_run_id, run.requester_user_id, run.channel_id) == (
        RunStatus.COMPLETED,
        None,
        None,
        500,
    )
    assert re.fullmatch(r"agent:researcher:cron:[0-9a-f-]{36}", session.key)
    assert (session.kind, session.depth, session.role, session.spawn_site) == (
        SessionKind.MAIN,
        0,
        SessionRole.MAIN,
        SpawnSite.CRON,
    )
    assert session.requester_session_key is None and session.label == "digest"
    (payload,) = payloads
    assert (payload["body"], payload["source"], payload["mention_user_id"], payload["agent_label"]) == (
        "summary 1",
        "schedule",
        None,
        "digest",
    )
    assert announcement.channel_id == 500
    (fired,) = events(logs, "schedule_fired")
    assert (fired["schedule_id"], fired["name"], fired["agent_alias"], fired["run_id"], fired["spawn_site"]) == (
        schedule[0],
        "digest",
        "researcher",
        run_id,
        "cron",
    )
    assert fired["slot"] == "2024-01-01T11:00:00+00:00"
    run_lines = [line for line in logs if line.get("run_id") == run_id and line["event"].startswith("run_")]
    assert {line["event"]: line.get("spawn_site") for line in run_lines} == {
        "run_queued": None,  # logged by whoever queues it, before the run's own context exists
        "run_started": "cron",
        "run_finished": "cron",
    }
    assert not events(logs, "schedule_missed")


async def test_two_timers_racing_for_a_slot_fire_it_once(tmp_path):
    clock = Clock("2024-01-01 10:30")
    async with core(tmp_path, clock, Researcher()) as orchestrator:
        clock.set("2024-01-01 11:00:00")
        fired = await asyncio.gather(*(orchestrator.schedules.fire_due(1) for _ in range(3)))
        assert len([run_id for run_id in fired if run_id is not None]) == 1
        await orchestrator.core.dispatch.wait_idle()
        assert await cron_runs(orchestrator) == [("[cron:1 digest] Summarise the hour", "completed")]


async def test_slots_missed_while_down_fire_once_at_start_up_and_never_again(tmp_path):
    clock, researcher = Clock("2024-01-01 10:30"), Researcher()
    async with core(tmp_path, clock, researcher):
        pass
    clock.set("2024-01-01 13:20")  # 11:00, 12:00 and 13:00 were missed
    with capture_logs() as logs:
        async with core(tmp_path, clock, researcher) as orchestrator:
            await orchestrator.core.dispatch.wait_idle()
            assert await cron_runs(orchestrator) == [("[cron:1 digest] Summarise the hour", "completed")]
        async with core(tmp_path, clock, researcher):
            pass
        clock.set("2024-01-01 13:59:59")
        async with core(tmp_path, clock, researcher) as orchestrator:
            assert len(await cron_runs(orchestrator)) == 1
            assert len(await outbox_payloads(orchestrator)) == 1
    (missed,) = events(logs, "schedule_missed")
    assert (missed["slot"], missed["slots"], missed["late_seconds"]) == ("2024-01-01T13:00:00+00:00", 3, 1200.0)
    assert len(events(logs, "schedule_fired")) == 1 and researcher.prompts == ["[cron:1 digest] Summarise the hour"]


async def test_a_restart_after_a_firing_does_not_fire_that_slot_again(tmp_path):
    clock, researcher = Clock("2024-01-01 10:30"), Researcher()
    async with core(tmp_path, clock, researcher) as orchestrator:
        clock.set("2024-01-01 11:00:01")
        assert await orchestrator.schedules.fire_due(1) is not None
    clock.set("2024-01-01 11:05")
    for _ in range(2):
        async with core(tmp_path, clock, researcher) as orchestrator:
            assert len(await cron_runs(orchestrator)) == 1
    assert len(researcher.prompts) == 1


async def test_a_run_cut_short_by_a_restart_is_interrupted_not_fired_again(tmp_path):
    clock, stuck = Clock("2024-01-01 10:30"), Gate()
    async with core(tmp_path, clock, stuck) as orchestrator:
        clock.set("2024-01-01 11:00:01")
        await orchestrator.schedules.fire_due(1)
        await asyncio.wait_for(stuck.entered.wait(), 5)
        await orchestrator.close()  # the process dies mid-run
    async with core(tmp_path, clock, Researcher()) as orchestrator:
        assert await cron_runs(orchestrator) == [("[cron:1 digest] Summarise the hour", "interrupted")]
        (payload,) = await outbox_payloads(orchestrator)
    assert payload["status_line"].startswith("interrupted") and payload["source"] == "schedule"


async def test_slots_older_than_the_grace_are_skipped_with_a_log_line(tmp_path):
    weekly = HOURLY.replace('cron = "0 * * * *"', 'cron = "0 9 * * 1"')
    clock, researcher = Clock("2024-01-08 08:00"), Researcher()  # a Monday, an hour before the slot
    async with core(tmp_path, clock, researcher, weekly):
        pass
    clock.now = at("2024-01-08 09:00") + MISSED_SLOT_GRACE_SECONDS + 60
    with capture_logs() as logs:
        for _ in range(2):
            async with core(tmp_path, clock, researcher, weekly) as orchestrator:
                assert await cron_runs(orchestrator) == []
    (skipped,) = events(logs, "schedule_skipped")
    assert (skipped["schedule_id"], skipped["name"], skipped["oldest_slot"]) == (
        1,
        "digest",
        "2024-01-08T09:00:00+00:00",
    )
    assert researcher.prompts == []


async def test_a_firing_may_spawn_one_level_like_a_top_level_run(tmp_path):
    clock = Clock("2024-01-01 10:30")
    agent = Agent([{"prompt": "child: dig"}])
    async with core(tmp_path, clock, agent) as orchestrator:
        clock.set("2024-01-01 11:00:01")
        await orchestrator.schedules.fire_due(1)
        await orchestrator.core.dispatch.wait_idle()
        payloads = await outbox_payloads(orchestrator)
    assert agent.results == ["child answer"]  # spawn_subagent answers with the child's text
    assert [p["body"] for p in payloads] == [f"main says: {agent.results[0]}"]


async def test_config_schedules_follow_the_file_across_restarts(tmp_path):
    clock = Clock("2024-01-01 10:30")
    async with core(tmp_path, clock, Researcher()):
        pass
    moved = HOURLY.replace('cron = "0 * * * *"', 'cron = "30 * * * *"').replace("Summarise the hour", "Sum up")
    clock.set("2024-01-01 12:45")
    async with core(tmp_path, clock, Researcher(), moved) as orchestrator:
        assert await cron_runs(orchestrator) == []  # a new time fires no slot from before the change
        (row,) = await schedules(orchestrator)
        assert tuple(row) == (1, "30 * * * *", "Sum up", at("2024-01-01 12:45"))
    gone = HOURLY.split("[[schedules]]")[0]
    async with core(tmp_path, clock, Researcher(), gone) as orchestrator:
        assert await schedules(orchestrator) == []


async def test_a_slot_over_budget_is_skipped_with_the_reason_not_fired_later(tmp_path):
    config = HOURLY.replace('model = "test/researcher"', 'model = "test/researcher"\ntokens_per_day = 10')
    clock, researcher = Clock("2024-01-01 10:30"), Researcher()
    with capture_logs() as logs:
        async with core(tmp_path, clock, researcher, config) as orchestrator:
            (schedule,) = await schedules(orchestrator)
            clock.set("2024-01-01 11:00:02")
            assert await orchestrator.schedules.fire_due(schedule[0]) is not None
            await orchestrator.core.dispatch.wait_idle()
            clock.set("2024-01-01 12:00:02")
            assert await orchestrator.schedules.fire_due(schedule[0]) is None
            assert await orchestrator.schedules.fire_due(schedule[0]) is None
            claimed = (await schedules(orchestrator))[0].claimed_through
    assert researcher.prompts == [f"[cron:{schedule[0]} digest] Summarise the hour"]
    assert claimed == at("2024-01-01 12:00")
    (skipped,) = events(logs, "schedule_skipped")
    assert skipped["slot"] == "2024-01-01T12:00:00+00:00"
    assert skipped["reason"].startswith("Over budget: agent researcher's tokens today: ")
    assert "(agents.list.researcher.tokens_per_day). It resets at 00:00 UTC, in 11h59m." in skipped["reason"]


async def test_a_firings_session_is_archived_after_it_ends_and_pruned_once_old(tmp_path):
    """In 2030: the archive timer runs in real time, and must not fire (at once, for a past date) under the test."""
    clock, researcher = Clock("2030-01-01 10:30"), Researcher()
    async with core(tmp_path, clock, researcher) as orchestrator:
        (schedule,) = await schedules(orchestrator)
        clock.set("2030-01-01 11:00:02")
        run_id = await orchestrator.schedules.fire_due(schedule[0])
        await orchestrator.core.dispatch.wait_idle()
        key = (await orchestrator.runs.get(run_id)).session_key
        assert (await orchestrator.sessions.get(key)).archive_at == at("2030-01-01 12:00:02")  # 60 min after it ended
        clock.set("2030-01-01 12:00:03")
        await orchestrator.core.archiving.archive(key)
        assert (await orchestrator.sessions.get(key)).archived_at == at("2030-01-01 12:00:03")
        (announcement,) = await orchestrator.outbox.for_run(run_id)
        async with orchestrator._db.transaction() as tx:  # as the delivery worker would
            await orchestrator.outbox.mark_delivered(tx, announcement.id, clock.now, 1, [1])
        clock.set("2030-01-31 12:00:04")  # 30 days on: retention's default
        report = await orchestrator.core.retention.prune()
        assert await orchestrator.sessions.get(key) is None and await orchestrator.runs.get(run_id) is None
    assert report.deleted["sessions"] == 1


async def test_a_firing_while_the_sub_agent_queue_is_full_is_skipped_not_queued(tmp_path):
    config = HOURLY.replace(
        "[agents.list.main]", "[agents.defaults.subagents]\nmax_concurrent = 1\nmax_queued = 1\n\n[agents.list.main]"
    )
    clock, stuck = Clock("2024-01-01 10:30"), Gate()
    with capture_logs() as logs:
        async with core(tmp_path, clock, stuck, config) as orchestrator:
            (schedule,) = await schedules(orchestrator)
            clock.set("2024-01-01 11:00:02")
            assert await orchestrator.schedules.fire_due(schedule[0]) is not None  # takes the one slot
            await stuck.entered.wait()
            clock.set("2024-01-01 12:00:02")
            assert await orchestrator.schedules.fire_due(schedule[0]) is not None  # waits: the queue is full now
            clock.set("2024-01-01 13:00:02")
            assert await orchestrator.schedules.fire_due(schedule[0]) is None
            assert len(await cron_runs(orchestrator)) == 2
            claimed = (await schedules(orchestrator))[0].claimed_through
            stuck.opened.set()
    assert claimed == at("2024-01-01 13:00")
    (skipped,) = events(logs, "schedule_skipped")
    assert skipped["slot"] == "2024-01-01T13:00:00+00:00"
    assert skipped["reason"].startswith("The sub-agent queue is full (1 runs waiting")
