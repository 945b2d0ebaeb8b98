"""Announcements arrive exactly once: through Discord errors, lost answers, and restarts of the bot."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import pytest

from tests.conftest import API_KEY, BOT_TOKEN, announcement_for, spawned_run_id

MESSAGES_ROUTE = r"^/channels/\d+/messages$"


@pytest.fixture(autouse=True)
def _announcements_only(world):
    """Failures are injected on the messages route: keep live status messages out of the way."""
    world.status_messages = False


async def spawn_and_get_run_id(world, task="Summarise the plan") -> str:
    inter = await world.discord.slash(world.alice, world.channel, "subagents spawn", agent="researcher", task=task)
    reply = await world.discord.wait_followup(inter)
    return spawned_run_id(reply)


def announcements(world, run_id):
    return [m for m in world.bot_messages() if announcement_for(run_id)(m)]


async def wait_for_outbox(world, predicate, timeout=10.0):
    """Wait until the run's outbox row satisfies ``predicate`` (status, attempts)."""
    async def poll():
        while not (rows := world.rows("SELECT status, attempts FROM outbox")) or not predicate(rows[0]):
            await asyncio.sleep(0.05)
        return rows[0]

    return await asyncio.wait_for(poll(), timeout)


async def test_three_500s_after_commit_still_post_exactly_once(world):
    """Discord creates the message but answers 500 three times; discord.py retries with the same nonce."""
    world.llm.reply("final answer")
    await world.start_bot()
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 500, times=3, after_commit=True)

    run_id = await spawn_and_get_run_id(world)
    await wait_for_outbox(world, lambda row: row[0] == "delivered", timeout=30)

    posted = announcements(world, run_id)
    assert len(posted) == 1
    assert "final answer" in posted[0]["content"]
    assert len(world.discord.requests_matching("POST", MESSAGES_ROUTE)) == 4


async def test_worker_backs_off_on_503_and_the_nonce_prevents_a_duplicate(world):
    """503s are not retried by discord.py: our worker retries later with the same nonce."""
    world.llm.reply("final answer")
    await world.start_bot()
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 503, times=2, after_commit=True)

    run_id = await spawn_and_get_run_id(world)
    row = await wait_for_outbox(world, lambda row: row[0] == "delivered")

    assert row == ("delivered", 2)
    assert len(announcements(world, run_id)) == 1


async def test_permanent_error_fails_the_row_without_retrying(world):
    world.llm.reply("final answer")
    await world.start_bot()
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 403, times=1, code=50001, message="Missing Access")

    await spawn_and_get_run_id(world)
    row = await wait_for_outbox(world, lambda row: row[0] != "pending")

    assert row == ("failed", 1)
    assert world.rows("SELECT last_error FROM outbox")[0][0].startswith("Forbidden(")
    assert len(world.discord.requests_matching("POST", MESSAGES_ROUTE)) == 1


async def test_undelivered_announcement_is_posted_once_after_restart(world):
    """The bot stops while its announcement is undelivered (Discord even created it, but the answer was lost)."""
    world.llm.reply("final answer")
    bot = await world.start_bot(retry_base_delay=60)
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 503, times=1, after_commit=True)

    run_id = await spawn_and_get_run_id(world)
    await wait_for_outbox(world, lambda row: row == ("pending", 1))
    await world.stop_bot(bot)
    assert len(announcements(world, run_id)) == 1  # created on Discord's side, unknown to the bot

    await world.start_bot()
    await wait_for_outbox(world, lambda row: row[0] == "delivered")

    assert len(announcements(world, run_id)) == 1
    assert world.rows("SELECT status FROM runs") == [("completed",)]


async def test_undelivered_announcement_never_sent_is_posted_after_restart(world):
    world.llm.reply("final answer")
    bot = await world.start_bot(retry_base_delay=60)
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 503, times=1)

    run_id = await spawn_and_get_run_id(world)
    await wait_for_outbox(world, lambda row: row == ("pending", 1))
    await world.stop_bot(bot)
    assert announcements(world, run_id) == []

    await world.start_bot()
    await wait_for_outbox(world, lambda row: row[0] == "delivered")
    assert len(announcements(world, run_id)) == 1


async def test_bot_killed_mid_run_announces_interrupted_once_after_restart(world):
    """SIGKILL the bot process while the model request hangs; the next start tells the requester."""
    world.llm.hang()
    config_path = world.write_config()
    env = {**os.environ, "TB_TEST_TOKEN": BOT_TOKEN, "TB_TEST_API_KEY": API_KEY}
    log_path = world.tmp_path / "bot.log"
    with log_path.open("wb") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "--config", str(config_path),
            env=env, stdout=asyncio.subprocess.DEVNULL, stderr=log_file,
        )
    try:
        await world.discord.wait_for_sessions(1, timeout=30)
        await world.discord.wait_for_request("PUT", r"/guilds/\d+/commands$", timeout=30)
        run_id = await spawn_and_get_run_id(world)
        await world.llm.wait_hanging(1, timeout=15)
        assert world.rows("SELECT status FROM runs") == [("running",)]
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()

    logs = [json.loads(line) for line in log_path.read_text().splitlines()]
    started = [entry for entry in logs if entry["event"] == "run_started"]
    assert started and started[0]["run_id"] == world.rows("SELECT id FROM runs")[0][0]
    assert started[0]["session_key"].startswith("agent:researcher:subagent:") and started[0]["depth"] == 1
    assert any(entry.get("logger", "").startswith("discord.") for entry in logs)  # discord.py's records, as JSON
    assert BOT_TOKEN not in log_path.read_text() and API_KEY not in log_path.read_text()

    await world.start_bot()
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    assert "⚠️ Subagent **researcher**" in announcement["content"]
    assert "interrupted: the bot restarted while this run was in progress" in announcement["content"]
    assert world.rows("SELECT status FROM runs") == [("interrupted",)]
    await wait_for_outbox(world, lambda row: row[0] == "delivered")
    assert len(announcements(world, run_id)) == 1
