"""Archiving sub-agent sessions: after ``archive_after_minutes``, or right after delivery for
``cleanup: delete``; deadlines live in SQLite and survive restarts; the transcript is kept."""

from __future__ import annotations

import asyncio
import time

from bot.core.runs.requests import SpawnRequest
from storage import due_rows
from tests import stores
from tests.core_support import (
    ARCHIVING,
    ORIGIN,
    Gate,
    Script,
    ScriptedModels,
    chat_and_wait,
    running_core,
    settle,
    spawned_and_done,
    text,
)
from tests.db_views import outbox_payloads
from tests.polling import eventually

MODELS = ScriptedModels(m=text("answer"))


async def archived_at(core, key):
    return (await core.sessions.get(key)).archived_at


async def test_session_is_archived_after_the_configured_time_and_keeps_its_transcript(tmp_path):
    async with running_core(tmp_path, MODELS, ARCHIVING.format(minutes=0.01)) as core:
        accepted = await spawned_and_done(core)
        session = await core.sessions.get(accepted.session_key)
        assert session.archived_at is None and session.archive_at is not None
        started = time.time()
        await settle(core, lambda: archived_at(core, accepted.session_key))
        assert time.time() - started < 5
        assert await core.transcripts.count(accepted.session_key) == 2


async def test_archive_deadline_survives_a_restart(tmp_path):
    config = ARCHIVING.format(minutes=0.02)
    async with running_core(tmp_path, MODELS, config) as core:
        accepted = await spawned_and_done(core)
    assert await _archived_now(tmp_path, accepted.session_key) is None
    stores.query(  # time passes while it is down
        tmp_path / "core.sqlite3",
        "UPDATE sessions SET archive_at = archive_at - 60 WHERE key = ?",
        (accepted.session_key,),
    )

    async with running_core(tmp_path, MODELS, config) as core:
        await settle(core, lambda: archived_at(core, accepted.session_key), timeout=3)


async def _archived_now(tmp_path, key):
    return stores.query(tmp_path / "core.sqlite3", "SELECT archived_at FROM sessions WHERE key = ?", (key,))[0][0]


async def test_zero_means_never(tmp_path):
    async with running_core(tmp_path, MODELS, ARCHIVING.format(minutes=0)) as core:
        accepted = await spawned_and_done(core)
        session = await core.sessions.get(accepted.session_key)
        assert session.archive_at is None and session.archived_at is None


async def test_cleanup_delete_archives_only_after_delivery_even_across_a_restart(tmp_path):
    config = ARCHIVING.format(minutes=60)
    main = Script(("sessions_spawn", {"task": "do it", "cleanup": "delete"}))
    async with running_core(tmp_path, ScriptedModels(m=main), config) as core:
        await chat_and_wait(core)
        child = await core.sessions.get(main.results[0]["childSessionKey"])

        async def announced():
            return len(await outbox_payloads(core)) == 2

        await settle(core, announced)
        session = await core.sessions.get(child.key)
        assert (session.cleanup, session.archive_at, session.archived_at) == ("delete", None, None)

    async with running_core(tmp_path, ScriptedModels(m=main), config) as core:
        assert await archived_at(core, child.key) is None
        await core.announcement_delivered(main.results[0]["runId"])
        assert await archived_at(core, child.key) is not None
        assert await core.transcripts.count(child.key) >= 2


async def test_archived_session_refuses_follow_ups(tmp_path):
    from bot.core.tools.session_toolset import Caller

    async with running_core(tmp_path, MODELS, ARCHIVING.format(minutes=0.01)) as core:
        accepted = await spawned_and_done(core)
        await settle(core, lambda: archived_at(core, accepted.session_key))
        main = await core.sessions.get("agent:main:discord:channel:100")
        # from a run of the member who owns it (a tool call acts for the person whose turn it is)
        answer = await core.core.tools.tool_sessions_send(Caller(main, accepted.run_id), accepted.session_key, "more?")
        assert answer["status"] == "error"
        assert answer["error"].startswith(f"Session {accepted.session_key} was archived ")
        assert answer["error"].endswith(
            "takes no more messages. Spawn a new sub-agent to go on "
            "(its transcript stays readable with /subagents log)."
        )


def archive_timers(core) -> list[str]:
    return [job.id for job in core.core.ctx.timers._scheduler.get_jobs() if "archive" in job.id]


async def test_many_finished_sessions_wait_on_one_timer_and_are_archived_page_by_page(tmp_path, monkeypatch):
    monkeypatch.setattr(due_rows, "PAGE", 2)  # five due at once: three pages
    config = ARCHIVING.format(minutes=0.02)  # 1.2 s after each run ends
    async with running_core(tmp_path, MODELS, config) as core:
        spawned = await asyncio.gather(*(spawned_and_done(core) for _ in range(5)))
        keys = [accepted.session_key for accepted in spawned]
        assert archive_timers(core) == ["sweep:archive"]
        assert [await archived_at(core, key) for key in keys] == [None] * 5

        timers_seen: set[int] = set()

        async def all_archived():
            timers_seen.add(len(archive_timers(core)))  # none while the sweep runs: its job is taken off to run it
            return None not in [await archived_at(core, key) for key in keys]

        await settle(core, all_archived)
        assert timers_seen <= {0, 1}
        await eventually(  # asleep until its next look, nothing left due
            lambda: archive_timers(core) == ["sweep:archive"], timeout=5, describe="the sweep set for its next look"
        )

    async with running_core(tmp_path, MODELS, config) as core:  # and a restart schedules no job per session
        assert archive_timers(core) == ["sweep:archive"]


async def test_a_deadline_met_while_its_session_is_live_is_dropped_and_the_runs_end_sets_the_next(tmp_path):
    gate = Gate()
    config = ARCHIVING.format(minutes=0.02)
    async with running_core(tmp_path, ScriptedModels(m=gate), config) as core:
        accepted = await core.spawn(SpawnRequest(agent_id="main", task="do it", origin=ORIGIN))
        await gate.entered.wait()
        stores.query(  # a deadline left on the session by a bot of another version, or an edit: already past
            tmp_path / "core.sqlite3",
            "UPDATE sessions SET archive_at = ? WHERE key = ?",
            (time.time() - 5, accepted.session_key),
        )
        other = config + '[durability]\nexecutor_id = "other"\n'
        async with running_core(tmp_path, ScriptedModels(m=gate), other):  # another process: its sweep finds it due

            async def deadline_dropped():
                return (await core.sessions.get(accepted.session_key)).archive_at is None

            await settle(core, deadline_dropped)
            assert await archived_at(core, accepted.session_key) is None  # never while its run is live
            gate.opened.set()

            async def done():
                return (await core.runs.get(accepted.run_id)).status.is_terminal

            await settle(core, done)
            assert (await core.sessions.get(accepted.session_key)).archive_at is not None
            await settle(core, lambda: archived_at(core, accepted.session_key))


async def test_a_deadline_on_a_session_that_is_never_archived_is_dropped_not_tried_for_ever(tmp_path):
    config = ARCHIVING.format(minutes=60)
    async with running_core(tmp_path, MODELS, config) as core:
        await chat_and_wait(core, "hello")
        [main_key] = [row[0] for row in stores.query(tmp_path / "core.sqlite3", "SELECT key FROM sessions")]
    stores.query(
        tmp_path / "core.sqlite3", "UPDATE sessions SET archive_at = ? WHERE key = ?", (time.time() - 5, main_key)
    )

    async with running_core(tmp_path, MODELS, config) as core:

        async def deadline_dropped():
            return (await core.sessions.get(main_key)).archive_at is None

        await settle(core, deadline_dropped)
        assert await archived_at(core, main_key) is None  # a conversation's main session lives on
        assert await core.sessions.next_archive_at() is None
