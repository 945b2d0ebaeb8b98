"""A stop is a clean stop: ``python -m bot`` sent SIGTERM (``docker stop``, ``systemctl stop``) or SIGINT (Ctrl-C)
while a run's model request is in flight closes within the stop bound and exits 0 with no traceback, its heartbeat
ended (another process may take its runs over at once) and the outbox rows it held released; at the next start the
run resumes from its journal and is announced exactly once."""

from __future__ import annotations

import signal

import pytest

from tests.harness import QUICK_RECOVERY, announcement_for
from tests.polling import eventually
from tests.test_wire_delivery import announcements, spawn_and_get_run_id
from tests.test_wire_startup import BotProcess, assert_clean

COMMANDS = r"/guilds/\d+/commands$"
CLOSE_WITHIN = 15.0  # seconds: the stop bound (8 s) and the test machine's slack


@pytest.fixture(autouse=True)
def _announcements_only(world):
    """Live status messages stay out of the channel: one announcement is all the run posts. The run resumed at the
    next start waits for a short poll, not DBOS's default second."""
    world.status_messages = False
    world.extra_config = QUICK_RECOVERY


async def started(world) -> BotProcess:
    """The bot as a process of its own, logged in and with its commands synced."""
    bot = await BotProcess.start(world.write_config())
    await world.discord.wait_for_sessions(1, timeout=30)
    await world.discord.wait_for_request("PUT", COMMANDS, timeout=30)
    return bot


async def stopped(bot: BotProcess, signum: signal.Signals) -> int:
    """Send ``signum`` and wait for the exit code (a process that outlives the bound fails the test)."""
    try:
        return await bot.interrupt(signum, timeout=CLOSE_WITHIN)
    finally:
        bot.kill()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_stopped_process_closes_cleanly_and_its_run_resumes_and_is_announced_once_at_the_next_start(
    world, signum
):
    world.llm.hang()
    bot = await started(world)
    run_id = await spawn_and_get_run_id(world)
    await world.llm.wait_hanging(1, timeout=15)
    assert world.rows("SELECT status FROM runs") == [("running",)]

    assert await stopped(bot, signum) == 0
    assert_clean(bot.stderr)
    assert bot.events("bot_stopping") and bot.events("bot_stopped")
    assert world.rows("SELECT heartbeat_at, claimed_by FROM processes") == [(0, None)]  # ended: taken over at once
    assert world.rows("SELECT status FROM runs") == [("running",)]  # handed on, not settled
    assert announcements(world, run_id) == []

    world.llm.reply("The plan, summarised after the restart.")
    await world.start_bot()
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    assert "The plan, summarised after the restart." in announcement["content"]
    await world.quiescent()
    assert world.rows("SELECT status FROM runs") == [("completed",)]
    assert announcements(world, run_id) == [announcement]
    assert len(world.llm.requests) == 2  # the cut request, sent again once


async def test_a_stopped_process_releases_the_announcement_it_was_delivering(world):
    """SIGTERM while Discord holds an announcement's post back (a long 429): the process still exits 0 within the
    bound, and its claim on the row ends, so any process delivers it at once; the next start posts it once."""
    world.llm.reply("The plan.")
    posts = rf"^/channels/{world.channel.id}/messages$"
    world.discord.inject_failure("POST", posts, 429, times=1, retry_after=25)  # under max_ratelimit_timeout: waited out
    bot = await started(world)
    run_id = await spawn_and_get_run_id(world)
    await world.discord.wait_for_request("POST", posts, timeout=15)  # discord.py now waits out the 429
    await eventually(
        lambda: world.rows("SELECT claimed_by IS NOT NULL AND claim_until IS NOT NULL FROM outbox") == [(1,)],
        timeout=10,
        describe=lambda: f"the announcement claimed: {world.rows('SELECT claimed_by, claim_until FROM outbox')}",
    )

    assert await stopped(bot, signal.SIGTERM) == 0
    assert_clean(bot.stderr)
    assert world.rows("SELECT status, claim_until FROM outbox") == [("pending", None)]

    await world.start_bot()
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    await world.quiescent()
    assert len(announcements(world, run_id)) == 1
