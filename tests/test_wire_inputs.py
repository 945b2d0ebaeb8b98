"""Bad input never hurts, over the wire: long input gets a short private error (never a reply Discord rejects),
durations are bounded before anything is written, a corrupt deadline row cannot stop the bot from starting,
and text with no visible character is empty."""

from __future__ import annotations

import contextlib
import re
import sqlite3

import pytest
from structlog.testing import capture_logs

from tests.harness import answer_to
from tests.test_wire_control import spawn
from tests.test_wire_focus import command_in, focused_thread

LONG = 6000
USAGE = "Usage: /session idle <duration|off> (example: /session idle 24h, 90m or off)."


def cut(text: str) -> str:
    """``text`` as an error message quotes it: 80 characters, the last one ``…``."""
    return text[:79] + "…"


async def short_private_error(world, user, channel, name, **options) -> str:
    answer = await command_in(world, user, channel, name, **options)
    assert len(answer) <= 2000, len(answer)
    return answer


@pytest.mark.parametrize(
    ("name", "options", "expected"),
    [
        ("subagents spawn", {"agent": "a" * LONG, "task": "t"}, f'⚠️ Invalid agentId "{cut("a" * LONG)}". Agent IDs'),
        (
            "subagents spawn",
            {"agent": "researcher", "task": "t", "model": "m" * LONG},
            f"⚠️ Model '{cut('m' * LONG)}' must look like '<provider>/<model>'",
        ),
        (
            "subagents spawn",
            {"agent": "researcher", "task": "t", "model": "nowhere/" + "m" * LONG},
            f"⚠️ Unknown model '{cut('nowhere/' + 'm' * LONG)}': no provider named 'nowhere' is configured",
        ),
        ("subagents info", {"target": "z" * LONG}, f"⚠️ Unknown subagent id: {cut('z' * LONG)}"),
        ("subagents info", {"target": "1" * LONG}, f"⚠️ Invalid subagent index: {cut('1' * LONG)}"),
        ("subagents log", {"target": "z" * LONG}, f"⚠️ Unknown subagent id: {cut('z' * LONG)}"),
        ("subagents kill", {"target": "z" * LONG}, f"⚠️ Unknown subagent id: {cut('z' * LONG)}"),
        ("subagents send", {"target": "z" * LONG, "message": "hi"}, f"⚠️ Unknown subagent id: {cut('z' * LONG)}"),
        ("subagents steer", {"target": "z" * LONG, "message": "hi"}, f"⚠️ Unknown subagent id: {cut('z' * LONG)}"),
        ("focus", {"target": "z" * LONG}, f"⚠️ Unknown subagent id: {cut('z' * LONG)}"),
    ],
)
async def test_long_input_gets_a_short_private_error_quoting_it_cut(world, name, options, expected):
    await world.start_bot()

    answer = await short_private_error(world, world.alice, world.channel, name, **options)

    assert answer.startswith(expected), answer[:300]
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]
    assert world.llm.requests == []


async def test_durations_past_365_days_are_refused_with_the_bound_and_change_nothing(world):
    thread = await focused_thread(world, "Plan D")
    lifetimes = "SELECT idle_seconds, max_age_seconds, bound_at, last_activity_at FROM thread_bindings"
    before = world.rows(lifetimes)
    assert before[0][:2] == (86400.0, 0.0)

    for duration, shown in (
        ("99999999999", "99999999999"),
        ("9" * 400, cut("9" * 400)),
        ("100000000d", "100000000d"),
        ("366d", "366d"),
    ):
        assert await short_private_error(world, world.alice, thread, "session idle", duration=duration) == (
            f"⚠️ Invalid duration '{shown}'. The longest is 365d. {USAGE}"
        )
    assert await short_private_error(world, world.alice, thread, "session max-age", duration="100000000d") == (
        "⚠️ Invalid duration '100000000d'. The longest is 365d. "
        "Usage: /session max-age <duration|off> (example: /session max-age 24h, 90m or off)."
    )
    assert await short_private_error(world, world.alice, thread, "session idle", duration="x" * LONG) == (
        f"⚠️ Invalid duration '{cut('x' * LONG)}'. {USAGE}"
    )
    assert world.rows(lifetimes) == before

    assert (await command_in(world, world.alice, thread, "session idle", duration="365d")).startswith(
        "✅ Idle timeout set to 8760h (next auto-unfocus at "
    )
    assert world.rows("SELECT idle_seconds FROM thread_bindings") == [(365 * 86400.0,)]


@pytest.mark.sqlite_only("writes text into a REAL column, which only SQLite's dynamic typing takes")
async def test_a_corrupt_deadline_row_is_logged_and_the_bot_starts_anyway(world):
    thread = await focused_thread(world, "Plan E")
    other = world.discord.add_thread(world.channel, "other")
    assert (await command_in(world, world.alice, other, "focus", target="1")).startswith("✅ bound")
    await world.stop_bot(world.bots[0])
    with contextlib.closing(sqlite3.connect(world.db_path)) as db, db:  # what an older bot or a bad edit left
        db.execute("UPDATE thread_bindings SET idle_seconds = ? WHERE thread_id = ?", (99999999999 * 3600.0, thread.id))
        db.execute("UPDATE thread_bindings SET max_age_seconds = 'soon' WHERE thread_id = ?", (other.id,))
        db.execute("UPDATE thread_bindings SET deadline_at = 0")  # and their stored deadlines say they are due

    with capture_logs() as logs:
        await world.start_bot()
        await world.until("SELECT COUNT(*) FROM thread_bindings WHERE deadline_at IS NULL OR deadline_at > 1", [(2,)])

    huge = world.rows("SELECT last_activity_at + idle_seconds FROM thread_bindings WHERE thread_id = ?", (thread.id,))
    assert world.rows("SELECT deadline_at FROM thread_bindings WHERE thread_id = ?", (thread.id,)) == huge
    assert world.rows("SELECT deadline_at FROM thread_bindings WHERE thread_id = ?", (other.id,)) == [(None,)]
    unreadable = [e for e in logs if e["event"] == "binding_deadline_unreadable"]
    assert len(unreadable) == 1
    assert f"thread_id={other.id}" in unreadable[0]["binding"] and "max_age_seconds='soon'" in unreadable[0]["binding"]
    assert world.rows("SELECT COUNT(*) FROM thread_bindings") == [(2,)]  # neither was ended

    shown = await command_in(world, world.alice, thread, "session idle")
    assert shown == "ℹ️ Idle timeout active (1e+11h, next auto-unfocus at 9999-12-31 23:59 UTC)."
    assert re.fullmatch(
        r"✅ Idle timeout set to 24h \(next auto-unfocus at .+ UTC\)\.",
        await command_in(world, world.alice, thread, "session idle", duration="24h"),
    )
    assert world.rows("SELECT idle_seconds FROM thread_bindings WHERE thread_id = ?", (thread.id,)) == [(86400.0,)]


@pytest.mark.parametrize("task", ["\u200b\u200b", "\u2060", "\u3164", "\u00a0\u3000", "\u2800", "\ufe0f\u200d"])
async def test_a_task_of_invisible_characters_is_empty(world, task):
    await world.start_bot()

    answer = await short_private_error(
        world, world.alice, world.channel, "subagents spawn", agent="researcher", task=task
    )

    assert answer == "⚠️ Task must not be empty."
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]
    assert world.llm.requests == []


async def test_steer_and_send_of_invisible_characters_are_refused_and_start_nothing(world):
    world.llm.hang()
    await world.start_bot()
    await spawn(world, task="Write the report")
    await world.llm.wait_hanging(1)

    assert (
        await short_private_error(
            world, world.alice, world.channel, "subagents steer", target="1", message="\u2060\u200b"
        )
        == "⚠️ Steer needs a message."
    )
    assert (
        await short_private_error(world, world.alice, world.channel, "subagents send", target="1", message="\u3164")
        == "⚠️ Send needs a message."
    )
    assert world.rows("SELECT COUNT(*) FROM run_inbox") == [(0,)]

    world.llm.release()
    await world.quiescent()
    assert (
        await short_private_error(
            world, world.alice, world.channel, "subagents send", target="1", message="\u00a0\u3000\u200b"
        )
        == "⚠️ Send needs a message."
    )
    assert world.rows("SELECT kind, status FROM runs") == [("spawn", "completed")]
    assert len(world.llm.requests) == 1


async def test_chat_messages_of_invisible_characters_start_nothing(world):
    thread = await focused_thread(world, "Plan F")
    requests = len(world.llm.requests)

    mention = await world.discord.send_user_message(
        world.alice, world.channel, f"<@{world.discord.bot_user_id}> \u200b\u2060"
    )
    hint = await world.discord.wait_for_message(world.channel, answer_to(mention))
    assert hint["content"] == "Mention me with a message, e.g. `@me summarise the plan`."
    in_thread = await world.discord.send_user_message(world.alice, thread, "\u3164\u2800")
    refusal = await world.discord.wait_for_message(thread, answer_to(in_thread))
    assert refusal["content"] == "⚠️ Message must not be empty."

    assert world.rows("SELECT kind FROM runs") == [("spawn",)]
    assert len(world.llm.requests) == requests
