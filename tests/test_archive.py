"""Archiving sub-agent sessions: after ``archive_after_minutes``, or right after delivery for
``cleanup: delete``; deadlines live in SQLite and survive restarts; the transcript is kept."""

from __future__ import annotations

import time

from tests import stores
from tests.core_support import (
    ARCHIVING,
    Script,
    ScriptedModels,
    chat_and_wait,
    outbox_payloads,
    running_core,
    settle,
    spawned_and_done,
    text,
)

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
    from bot.core.session_toolset import Caller

    async with running_core(tmp_path, MODELS, ARCHIVING.format(minutes=0.01)) as core:
        accepted = await spawned_and_done(core)
        await settle(core, lambda: archived_at(core, accepted.session_key))
        main = await core.sessions.get("agent:main:discord:channel:100")
        answer = await core.tool_sessions_send(Caller(main, "none"), accepted.session_key, "more?")
        assert answer["status"] == "error"
        assert answer["error"].startswith(f"Session {accepted.session_key} was archived ")
        assert answer["error"].endswith(
            "takes no more messages. Spawn a new sub-agent to go on "
            "(its transcript stays readable with /subagents log)."
        )
