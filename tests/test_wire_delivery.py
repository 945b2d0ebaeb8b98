"""Announcements arrive exactly once: through Discord errors, lost answers, and restarts of the bot; one
channel's trouble does not delay another's; and when one cannot arrive, its requester is told once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import discord
import pytest
from structlog.testing import capture_logs

from tests.harness import API_KEY, BOT_TOKEN, announcement_for, spawned_run_id
from tests.polling import eventually
from tests.test_wire_control import command
from tests.test_wire_persona import THREADS_ON, WEBHOOK_EXECUTE, thread_spawn

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


def notice_about(run_id):
    """Predicate: the notice telling the requester that the run's announcement could not be posted."""
    return lambda message: (
        "could not be posted" in message["content"] and f"/subagents log {run_id}" in (message["content"])
    )


async def wait_for_outbox(world, predicate, timeout=10.0):
    """Wait until the run's outbox row satisfies ``predicate`` (status, attempts); return the row."""
    sql = "SELECT status, attempts FROM outbox"
    return await eventually(
        lambda: next((row for row in world.rows(sql)[:1] if predicate(row)), None),
        timeout=timeout,
        describe=lambda: f"the outbox row to satisfy the predicate; (status, attempts) rows: {world.rows(sql)}",
    )


class _HundredthSleeps:
    """``asyncio`` as discord.http sees it, with every ``sleep`` a hundredth as long."""

    async def sleep(self, delay: float, result: object = None) -> object:
        return await asyncio.sleep(delay / 100, result)

    def __getattr__(self, name: str) -> object:
        return getattr(asyncio, name)


async def test_three_500s_after_commit_still_post_exactly_once(world, monkeypatch):
    """Discord creates the message but answers 500 three times; discord.py retries with the same nonce.
    Its waits before those retries (1 s, 3 s, 5 s) are fixed in its code; here they last a hundredth of that
    (``test_lost_answer_500_is_retried_and_deduped_by_nonce`` in the fake's contract tests waits for real)."""
    monkeypatch.setattr(discord.http, "asyncio", _HundredthSleeps())
    world.llm.reply("final answer")
    await world.start_bot()
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 500, times=3, after_commit=True)

    run_id = await spawn_and_get_run_id(world)
    await wait_for_outbox(world, lambda row: row[0] == "delivered", timeout=30)

    posted = announcements(world, run_id)
    assert len(posted) == 1
    assert "final answer" in posted[0]["content"]
    assert len(world.discord.requests_matching("POST", MESSAGES_ROUTE)) == 4


async def test_worker_backs_off_on_503_and_reads_the_channel_back_instead_of_posting_again(world):
    """503s are not retried by discord.py: our worker retries later, and first finds the part Discord created."""
    world.llm.reply("final answer")
    await world.start_bot()
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 503, times=2, after_commit=True)

    run_id = await spawn_and_get_run_id(world)
    row = await wait_for_outbox(world, lambda row: row[0] == "delivered")

    assert row == ("delivered", 1)
    assert len(announcements(world, run_id)) == 1
    assert len(world.discord.requests_matching("POST", MESSAGES_ROUTE)) == 1
    assert world.discord.requests_matching("GET", MESSAGES_ROUTE)  # the read-back


async def test_permanent_error_fails_the_row_without_retrying_and_tells_the_requester_by_dm(world):
    """The channel is inaccessible (Missing Access): no retry; Alice learns it by DM, and so does `info`."""
    world.llm.reply("final answer")
    await world.start_bot()
    channel_posts = rf"^/channels/{world.channel.id}/messages$"
    world.discord.inject_failure("POST", channel_posts, 403, times=1, code=50001, message="Missing Access")

    run_id = await spawn_and_get_run_id(world)
    row = await wait_for_outbox(world, lambda row: row[0] != "pending")

    assert row == ("failed", 1)
    assert world.rows("SELECT last_error FROM outbox")[0][0] == (
        "Discord answered 403 Forbidden (error code: 50001): Missing Access"
    )
    assert len(world.discord.requests_matching("POST", channel_posts)) == 1
    notice = await world.discord.wait_for_message(world.discord.add_dm_channel(world.alice), notice_about(run_id))
    assert notice["content"] == (
        f"<@{world.alice.id}> ⚠️ The result of subagent **researcher** could not be posted in "
        f"<#{world.channel.id}>: Discord answered 403 Forbidden (error code: 50001): Missing Access. "
        f"`/subagents info {run_id}` and `/subagents log {run_id}`, used where you started it, show the result."
    )
    await world.quiescent()
    assert world.rows("SELECT status, notice FROM outbox ORDER BY id") == [("failed", None), ("delivered", "dm")]
    info = await command(world, world.alice, "subagents info", target=run_id)
    assert (
        "Delivery: failed after 1 attempt(s): Discord answered 403 Forbidden (error code: 50001): Missing "
        "Access. The requester was told by DM."
    ) in info
    assert announcements(world, run_id) == []


@pytest.mark.parametrize("long_and_busy", [False, True], ids=["brief-restart", "down-past-the-nonce-window"])
async def test_undelivered_announcement_is_posted_once_after_restart(world, long_and_busy):
    """The bot stops while its announcement is undelivered (Discord even created it, but the answer was lost),
    possibly for longer than Discord remembers nonces while people keep talking: the restarted bot finds the
    message in the channel instead of posting it again."""
    world.llm.reply("final answer")
    bot = await world.start_bot(retry_base_delay=60)
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 503, times=1, after_commit=True)

    run_id = await spawn_and_get_run_id(world)
    await wait_for_outbox(world, lambda row: row == ("pending", 1))
    await world.stop_bot(bot)
    assert len(announcements(world, run_id)) == 1  # created on Discord's side, unknown to the bot
    [posted] = announcements(world, run_id)
    if long_and_busy:
        world.discord.advance_time(world.discord.nonce_window + 60)
        for number in range(150):
            await world.discord.send_user_message(world.alice, world.channel, f"chatter {number}")

    await world.start_bot()
    await wait_for_outbox(world, lambda row: row[0] == "delivered")

    assert len(announcements(world, run_id)) == 1
    assert world.rows("SELECT status FROM runs") == [("completed",)]
    assert announcements(world, run_id) == [posted]
    assert world.rows("SELECT message_ids_json FROM outbox") == [(f"[{posted['id']}]",)]
    assert len(world.discord.requests_matching("POST", MESSAGES_ROUTE)) == 1


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


async def start_bot_process(world, log_path):
    """The bot as a process of its own (``python -m bot``), with its logs in ``log_path``."""
    env = {**os.environ, "TB_TEST_TOKEN": BOT_TOKEN, "TB_TEST_API_KEY": API_KEY}
    with log_path.open("wb") as log_file:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "--config",
            str(world.write_config()),
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log_file,
        )


async def test_bot_killed_mid_run_announces_interrupted_once_after_restart(world):
    """Without durable runs: SIGKILL the bot process while the model request hangs; the next start tells the
    requester."""
    world.extra_config = "[durability]\nresume_interrupted = false"
    world.llm.hang()
    log_path = world.tmp_path / "bot.log"
    process = await start_bot_process(world, log_path)
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


async def test_bot_killed_mid_run_resumes_from_its_last_step_and_announces_once_after_restart(world):
    """SIGKILL the bot process while the run's second model request hangs (the first asked for a tool): the next start
    resumes the run from the journal (the first request is not sent again, the second is) and announces it once."""
    world.extra_config = "[agents.defaults.subagents]\nmax_spawn_depth = 2"  # the researcher gets session tools
    world.llm.tool_call("sessions_list")
    world.llm.hang()
    process = await start_bot_process(world, world.tmp_path / "bot.log")
    try:
        await world.discord.wait_for_sessions(1, timeout=30)
        await world.discord.wait_for_request("PUT", r"/guilds/\d+/commands$", timeout=30)
        run_id = await spawn_and_get_run_id(world)
        await world.llm.wait_hanging(1, timeout=15)
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()
    assert len(world.llm.requests) == 2 and world.rows("SELECT status FROM runs") == [("running",)]

    world.llm.reply("The plan, summarised after the tool.")
    await world.start_bot()
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    assert "The plan, summarised after the tool." in announcement["content"]
    assert world.rows("SELECT status FROM runs") == [("completed",)]
    first, second, again = world.llm.requests
    assert [message["role"] for message in first["messages"]] == ["system", "user"]
    assert again["messages"] == second["messages"] and second["messages"][-1]["role"] == "tool"
    await wait_for_outbox(world, lambda row: row[0] == "delivered")
    assert len(announcements(world, run_id)) == 1
    assert world.rows("SELECT requests, tool_calls FROM runs") == [(2, 1)]  # the replayed request counted once
    assert world.rows("SELECT SUM(requests) FROM usage_daily") == [(2,)]  # and its spending too


async def test_a_rate_limited_channel_does_not_hold_up_another_channels_announcement(world):
    other = world.discord.add_text_channel(world.guild, "other")
    await world.start_bot()
    first_channel_posts = rf"^/channels/{world.channel.id}/messages$"
    world.discord.inject_failure("POST", first_channel_posts, 429, times=1, retry_after=25)

    first = await spawn_and_get_run_id(world, "First")
    await world.discord.wait_for_request("POST", first_channel_posts)  # discord.py now waits out the 429 (< 30 s)
    inter = await world.discord.slash(world.alice, other, "subagents spawn", agent="researcher", task="Second")
    second = spawned_run_id(await world.discord.wait_followup(inter))
    await world.discord.wait_for_message(other, announcement_for(second))

    await world.until(
        "SELECT channel_id, status FROM outbox ORDER BY id", [(world.channel.id, "pending"), (other.id, "delivered")]
    )
    assert announcements(world, first) == []


async def test_a_rate_limit_longer_than_the_client_waits_is_retried_by_the_delivery_later(world):
    await world.start_bot()
    channel_posts = rf"^/channels/{world.channel.id}/messages$"
    world.discord.inject_failure("POST", channel_posts, 429, times=1, retry_after=90)  # over max_ratelimit_timeout

    run_id = await spawn_and_get_run_id(world, "First")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id), timeout=10)  # not 90 s later
    await world.until("SELECT status FROM outbox WHERE notice IS NULL", [("delivered",)])
    [(status, attempts, error)] = world.rows("SELECT status, attempts, last_error FROM outbox WHERE notice IS NULL")
    assert (status, attempts) == ("delivered", 1) and error == "Discord rate-limited it for 90s"
    assert len(announcements(world, run_id)) == 1


async def test_delivery_gives_up_after_the_bound_and_tells_the_requester_by_dm(world):
    world.discord_extra = 'delivery_give_up_after = "0.5s"'
    world.llm.reply("final answer")
    await world.start_bot()
    channel_posts = rf"^/channels/{world.channel.id}/messages$"
    world.discord.inject_failure("POST", channel_posts, 503, times=1000)

    run_id = await spawn_and_get_run_id(world)
    notice = await world.discord.wait_for_message(world.discord.add_dm_channel(world.alice), notice_about(run_id))

    [(status, attempts, error)] = world.rows("SELECT status, attempts, last_error FROM outbox WHERE notice IS NULL")
    assert status == "failed" and attempts > 1
    assert error.startswith("gave up after ") and error.endswith(
        " of retries, the last one: Discord answered 503 Service Unavailable (error code: 0): 503: Service Unavailable"
    )
    assert f"<@{world.alice.id}> ⚠️ The result of subagent **researcher** could not be posted" in notice["content"]
    assert error in notice["content"]
    assert len(world.discord.requests_matching("POST", channel_posts)) == attempts
    await world.quiescent()
    info = await command(world, world.alice, "subagents info", target=run_id)
    assert f"Delivery: failed after {attempts} attempt(s): {error}. The requester was told by DM." in info
    assert announcements(world, run_id) == []


async def working_in_a_thread(world, task):
    """A sub-agent spawned into its own thread, still working (the model hangs until released)."""
    world.extra_config = THREADS_ON
    world.llm.hang()
    await world.start_bot()
    run_id = await thread_spawn(world, task)
    await world.llm.wait_hanging(1)
    return run_id, world.discord.threads(world.channel)[0]


async def test_a_deleted_threads_announcement_is_noticed_in_the_parent_channel(world):
    run_id, thread = await working_in_a_thread(world, "Doomed")
    world.discord.inject_failure("POST", WEBHOOK_EXECUTE, 503, times=1000)
    world.llm.release()

    await wait_for_outbox(world, lambda row: row[0] == "pending" and row[1] >= 1)
    world.discord.delete_channel(thread)
    world.discord.clear_failures()
    notice = await world.discord.wait_for_message(world.channel, notice_about(run_id))

    assert notice["content"].startswith(
        f"<@{world.alice.id}> ⚠️ The result of subagent **researcher** could not be posted in <#{thread.id}>: "
        "Discord answered 404 Not Found (error code: 10003): Unknown Channel."
    )
    assert notice["author"]["id"] == str(world.discord.bot_user_id)
    await world.quiescent()
    assert world.rows("SELECT status, notice FROM outbox ORDER BY id") == [
        ("failed", None),
        ("delivered", "parent_channel"),
    ]
    assert len([m for m in world.discord.channel_messages(world.channel) if notice_about(run_id)(m)]) == 1
    info = await command(world, world.alice, "subagents info", target=run_id)
    assert "Unknown Channel. The requester was told in " + f"<#{world.channel.id}>." in info


async def test_a_thread_deleted_while_its_run_works_gets_the_notice_in_the_parent_channel(world):
    run_id, thread = await working_in_a_thread(world, "Short-lived")
    world.discord.delete_channel(thread)
    await world.until("SELECT COUNT(*) FROM thread_bindings", [(0,)])  # unbound before the result exists

    world.llm.release()
    notice = await world.discord.wait_for_message(world.channel, notice_about(run_id))

    assert notice["content"].startswith(
        f"<@{world.alice.id}> ⚠️ The result of subagent **researcher** could not "
        f"be posted in <#{thread.id}>: Discord answered 404 Not Found"
    )
    await world.quiescent()
    assert world.rows("SELECT status, notice FROM outbox ORDER BY id") == [
        ("failed", None),
        ("delivered", "parent_channel"),
    ]


async def test_a_gone_channel_is_told_by_dm_exactly_once_across_a_restart(world):
    """The channel is deleted while the run works; the DM notice is created but its answer lost; the bot stays
    down past Discord's nonce window. Alice gets the notice once."""
    doomed = world.discord.add_text_channel(world.guild, "doomed")
    dm = world.discord.add_dm_channel(world.alice)
    world.llm.hang()
    bot = await world.start_bot(retry_base_delay=60)
    inter = await world.discord.slash(world.alice, doomed, "subagents spawn", agent="researcher", task="Vanish")
    run_id = spawned_run_id(await world.discord.wait_followup(inter))
    await world.llm.wait_hanging(1)
    world.discord.delete_channel(doomed)
    world.discord.inject_failure("POST", rf"^/channels/{dm.id}/messages$", 503, times=1, after_commit=True)
    world.llm.release()

    await world.until(
        "SELECT status, notice, attempts FROM outbox ORDER BY id", [("failed", None, 1), ("pending", "dm", 1)]
    )
    await world.stop_bot(bot)
    assert len([m for m in world.discord.channel_messages(dm) if notice_about(run_id)(m)]) == 1
    world.discord.advance_time(world.discord.nonce_window + 60)

    await world.start_bot()
    await world.quiescent()

    notices = [m for m in world.discord.channel_messages(dm) if notice_about(run_id)(m)]
    assert len(notices) == 1
    assert (
        f"could not be posted in <#{doomed.id}>: Discord answered 404 Not Found (error code: 10003): "
        "Unknown Channel." in notices[0]["content"]
    )
    assert world.rows("SELECT status, notice FROM outbox ORDER BY id") == [("failed", None), ("delivered", "dm")]


async def test_a_requester_who_cannot_be_told_is_logged_at_error_level_and_info_says_so(world):
    """The channel is gone and Alice refuses DMs: the error log is the last resort."""
    world.alice.accepts_dms = False
    world.llm.reply("final answer")
    await world.start_bot()
    world.discord.inject_failure(
        "POST", rf"^/channels/{world.channel.id}/messages$", 404, code=10003, message="Unknown Channel"
    )

    with capture_logs() as logs:
        run_id = await spawn_and_get_run_id(world)
        await world.until(
            "SELECT status, notice, last_error FROM outbox ORDER BY id",
            [
                ("failed", None, "Discord answered 404 Not Found (error code: 10003): Unknown Channel"),
                (
                    "failed",
                    "dm",
                    "Discord answered 403 Forbidden (error code: 50007): Cannot send messages to this user",
                ),
            ],
        )
        info = await command(world, world.alice, "subagents info", target=run_id)

    assert "Unknown Channel. The requester could not be told (see the bot's error log)." in info
    failures = [(e["log_level"], e["requester_told_via"]) for e in logs if e["event"] == "delivery_failed"]
    assert failures == [("error", "dm"), ("error", None)]


async def test_a_retried_reply_is_not_mistaken_for_an_earlier_reply_with_the_same_words(world):
    world.llm.default = "Sure, done."
    await world.start_bot()
    bot_id = world.discord.bot_user_id
    first = await world.discord.send_user_message(world.alice, world.channel, f"<@{bot_id}> tidy the notes")
    await world.discord.wait_for_message(
        world.channel, lambda m: (m.get("message_reference") or {}).get("message_id") == first["id"]
    )
    await wait_for_outbox(world, lambda row: row[0] == "delivered")
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 503)  # the second reply's first post is not created

    second = await world.discord.send_user_message(world.alice, world.channel, f"<@{bot_id}> and the todo list")
    reply = await world.discord.wait_for_message(
        world.channel, lambda m: (m.get("message_reference") or {}).get("message_id") == second["id"], timeout=10
    )

    assert reply["content"] == "Sure, done."
    await world.quiescent()
    replies = [m for m in world.bot_messages() if m["content"] == "Sure, done."]
    assert len(replies) == 2
    assert world.rows("SELECT status, attempts FROM outbox ORDER BY id") == [("delivered", 0), ("delivered", 1)]
    assert len({ids for (ids,) in world.rows("SELECT message_ids_json FROM outbox")}) == 2


async def test_rows_waiting_behind_a_failing_row_count_their_give_up_bound_from_its_failure(world):
    world.discord_extra = 'delivery_give_up_after = "1h"'
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 503, times=10_000)
    await world.start_bot()
    await spawn_and_get_run_id(world, "First")
    await spawn_and_get_run_id(world, "Second")

    behind_the_first = (
        "SELECT attempts, first_failed_at IS NOT NULL FROM outbox WHERE id > (SELECT MIN(id) FROM outbox) ORDER BY id"
    )
    await world.until(behind_the_first, [(0, 1)], timeout=10)  # never tried, yet its clock runs with the first's
    first_failed, second_failed = [at for (at,) in world.rows("SELECT first_failed_at FROM outbox ORDER BY id")]
    assert second_failed - first_failed < 5
