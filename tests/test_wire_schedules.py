"""/schedule and [[schedules]] over the wire: an admin adds, lists and removes a schedule that fires into its
channel; others are refused; bad input gets its own message; a slot fires once across restarts.

Cron slots are minutes apart, so the bot runs on a clock the test moves: real time running an hour behind (so
what the core writes for the delivery worker, which keeps real time, is due at once), advanced past a slot when
the test wants it to come. The schedule's APScheduler job keeps real time, so "the minute came" is that job being
run now."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

import discord
import pytest
from apscheduler.jobstores.base import JobLookupError

from tests.fakes.discord_server import DEFAULT_BOT_PERMISSIONS
from tests.fakes.openai_server import Step
from tests.test_wire_control import command as control_command
from tests.test_wire_control import member

SCHEDULED = "✅ Scheduled job **digest** (run `"


class BehindClock:
    """Real time, an hour behind until the test moves it forward."""

    def __init__(self) -> None:
        self.lag = 3600.0

    def __call__(self) -> float:
        return time.time() - self.lag

    def move_past(self, when: float) -> None:
        self.lag -= when - self() + 1
        assert self.lag > 0, "the clock must stay behind real time"


def next_minute(clock: BehindClock) -> tuple[float, str]:
    """The next whole minute on ``clock`` at least 30 s ahead, and a daily cron expression for it (UTC): a test's
    start-up must not reach it (CI once started one a second before the minute, and the slot fired)."""
    slot = float(math.floor((clock() + 30) / 60) * 60 + 60)
    when = datetime.fromtimestamp(slot, UTC)
    return slot, f"{when.minute} {when.hour} * * *"


def run_timer_now(bot, schedule_id: int) -> None:
    """What APScheduler does when the slot's minute comes: run the schedule's job (JobLookupError if none)."""
    bot.orchestrator.core.ctx.timers._scheduler.modify_job(f"schedule:{schedule_id}", next_run_time=datetime.now(UTC))


async def command(world, user, command_name, /, **options) -> str:
    """Run a slash command; return the text of its answer, which only the user sees."""
    inter = await world.discord.slash(user, world.channel, command_name, **options)
    ack = await world.discord.wait_ack(inter)
    assert ack.status_code == 200 and ack.elapsed < 3 and ack.ephemeral
    reply = await world.discord.wait_followup(inter)
    assert reply["flags"] & 64, "schedule replies are private"
    return reply["content"]


def scheduled_posts(world) -> list[dict]:
    return [m for m in world.bot_messages() if m["content"].startswith(SCHEDULED)]


async def test_an_admin_adds_lists_and_removes_a_schedule_that_fires_into_its_channel(world):
    world.clock = clock = BehindClock()
    world.llm.reply("Morning digest: all quiet.")
    reports = world.discord.add_text_channel(world.guild, "reports")
    bot = await world.start_bot()
    admin = member(world, "admin", manage_guild=True)
    slot, cron = next_minute(clock)

    added = await command(
        world, admin, "schedule add", name="digest", cron=cron, agent="researcher", prompt="Summarise", channel=reports
    )
    assert added == (
        f"Scheduled **digest** (id 1, added by <@{admin.id}>): `{cron}` UTC → researcher in <#{reports.id}>, "
        f"next <t:{int(slot)}:R>."
    )
    assert await command(world, admin, "schedule list") == (
        f"Schedules in this server:\n- {added.removeprefix('Scheduled ').removesuffix('.')}"
    )
    assert world.rows("SELECT action, actor_user_id FROM audit_log") == [("schedule add", admin.id)]

    clock.move_past(slot)
    run_timer_now(bot, 1)
    post = await world.discord.wait_for_message(reports, lambda m: m["content"].startswith(SCHEDULED))
    await world.quiescent()

    assert post["content"].split("\n")[1] == "Morning digest: all quiet."
    assert post["content"].split("\n")[0].endswith("): completed successfully")
    mentions = world.discord.message_meta(post).allowed_mentions
    assert (mentions["parse"], mentions.get("users", []), "<@" in post["content"]) == ([], [], False)  # pings nobody
    assert world.llm.requests[-1]["messages"][-1] == {"role": "user", "content": "[cron:1 digest] Summarise"}
    assert [m["id"] for m in world.discord.channel_messages(reports)] == [post["id"]]
    assert world.rows("SELECT claimed_through, last_fired_at FROM schedules") == [(slot, slot)]

    assert await command(world, admin, "schedule remove", name="digest") == "Removed schedule **digest** (id 1)."
    assert await command(world, admin, "schedule list") == "No schedules in this server. Add one with /schedule add."
    assert world.rows("SELECT action FROM audit_log ORDER BY id") == [("schedule add",), ("schedule remove",)]
    with pytest.raises(JobLookupError):
        run_timer_now(bot, 1)


async def test_members_without_manage_server_are_refused(world):
    await world.start_bot()
    refusal = "⚠️ You need the Manage Server permission to manage schedules."
    assert await command(world, world.alice, "schedule list") == refusal
    assert (
        await command(world, world.alice, "schedule add", name="x", cron="0 9 * * *", agent="main", prompt="hi")
        == refusal
    )
    assert await command(world, world.alice, "schedule remove", name="x") == refusal
    assert world.rows("SELECT COUNT(*) FROM schedules") == [(0,)]
    group = next(c for c in world.discord.synced_commands(world.guild) if c["name"] == "schedule")
    assert group["default_member_permissions"] == str(discord.Permissions(manage_guild=True).value)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            {"cron": "61 * * * *"},
            '⚠️ "61 * * * *" is not a valid cron expression: minute "61": the last value (61) is higher than the '
            "maximum value (59).",
        ),
        ({"agent": "ghost"}, '⚠️ Unknown agent "ghost". Configured agents: main, researcher.'),
        ({"prompt": "   "}, "⚠️ Prompt must not be empty."),
        (
            {"timezone": "Mars/Base"},
            '⚠️ "Mars/Base" is not a known time zone; use an IANA name such as "Europe/Madrid".',
        ),
    ],
)
async def test_bad_input_is_refused_with_its_own_message(world, options, expected):
    await world.start_bot()
    admin = member(world, "admin", manage_guild=True)
    values = {"name": "digest", "cron": "0 9 * * *", "agent": "researcher", "prompt": "Summarise", **options}
    assert await command(world, admin, "schedule add", **values) == expected
    assert world.rows("SELECT COUNT(*) FROM schedules") == [(0,)]
    assert world.rows("SELECT COUNT(*) FROM audit_log") == [(0,)]


async def test_a_channel_the_bot_cannot_post_in_is_refused(world):
    no_send = discord.Permissions(DEFAULT_BOT_PERMISSIONS)
    no_send.send_messages = False
    world.discord.set_member_permissions(world.guild, world.discord.bot, no_send)
    world.guild.everyone_role.permissions &= ~discord.Permissions(send_messages=True).value
    await world.start_bot()
    admin = member(world, "admin", manage_guild=True)
    answer = await command(world, admin, "schedule add", name="d", cron="0 9 * * *", agent="main", prompt="hi")
    assert answer == f"⚠️ I cannot post in <#{world.channel.id}>: I am missing the Send Messages permission there."
    assert world.rows("SELECT COUNT(*) FROM schedules") == [(0,)]


async def test_a_missed_slot_fires_once_at_start_up_and_never_again(world):
    world.clock = clock = BehindClock()
    world.llm.reply("Evening digest.")
    slot, cron = next_minute(clock)
    world.extra_config = f"""
[[schedules]]
name = "digest"
cron = "{cron}"
agent = "researcher"
prompt = "Summarise the day"
channel_id = {world.channel.id}
"""
    await world.stop_bot(await world.start_bot())
    assert world.rows("SELECT name, claimed_through < ? FROM schedules", (slot,)) == [("digest", 1)]

    clock.move_past(slot + 30)  # the slot passes while the bot is down
    bot = await world.start_bot()
    await world.discord.wait_for_message(world.channel, lambda m: m["content"].startswith(SCHEDULED))
    await world.quiescent()
    admin = member(world, "admin", manage_guild=True)
    listing = await command(world, admin, "schedule list")
    refused = await command(world, admin, "schedule remove", name="digest")
    await world.stop_bot(bot)
    for _ in range(2):
        await world.stop_bot(await world.start_bot())

    assert listing == (
        f"Schedules in this server:\n- **digest** (id 1, config.toml): `{cron}` UTC → researcher in "
        f"<#{world.channel.id}>, next <t:{int(slot) + 86400}:R>"
    )
    assert refused == '⚠️ Schedule "digest" is defined in config.toml; remove it there.'
    assert len(scheduled_posts(world)) == 1 and len(world.bot_messages()) == 1
    assert [r["messages"][-1]["content"] for r in world.llm.requests] == ["[cron:1 digest] Summarise the day"]
    assert world.rows("SELECT status, requester_user_id FROM runs") == [("completed", None)]


async def test_a_running_firing_is_listed_and_stopped_in_its_channel(world):
    """A firing is one of its channel's conversation's children: /subagents list there shows it, /stop stops it."""
    world.clock = clock = BehindClock()
    world.llm.hang()
    bot = await world.start_bot()
    admin = member(world, "admin", manage_guild=True)
    slot, cron = next_minute(clock)
    await command(world, admin, "schedule add", name="digest", cron=cron, agent="researcher", prompt="Summarise")
    clock.move_past(slot)
    run_timer_now(bot, 1)
    await world.llm.wait_hanging()

    listing = await control_command(world, admin, "subagents list")
    assert "1. digest [scheduled researcher] (fake/gpt-4o-mini" in listing.splitlines()[2]
    assert await control_command(world, world.alice, "stop") == "Nothing of yours is running in this conversation."
    assert await control_command(world, admin, "stop") == "⚙️ Agent was aborted. Stopped 1 sub-agent."
    await world.until("SELECT kind, status FROM runs", [("spawn", "killed")])
    await world.quiescent()
    assert scheduled_posts(world) == []  # a killed run announces nothing


async def test_a_firings_own_sub_agent_is_killed_from_its_status_messages_button(world):
    """The Kill button names its run by id, which reaches any sub-agent below the channel's conversation."""
    world.clock = clock = BehindClock()

    def agent(body):
        said = " ".join(str(m.get("content")) for m in body["messages"] if m["role"] == "user")
        if "Dig deeper" in said:
            return Step.hang()  # the firing's sub-agent works until it is killed
        if body["messages"][-1]["role"] == "tool":
            return "I asked a sub-agent to dig deeper."
        return Step.calls([("sessions_spawn", {"task": "Dig deeper"})])

    world.llm.default = agent
    bot = await world.start_bot()
    admin = member(world, "admin", manage_guild=True)
    slot, cron = next_minute(clock)
    await command(world, admin, "schedule add", name="digest", cron=cron, agent="researcher", prompt="Summarise")
    clock.move_past(slot)
    run_timer_now(bot, 1)
    await world.llm.wait_hanging()
    child_id = world.rows("SELECT id FROM runs WHERE task = 'Dig deeper'")[0][0]
    status = await world.discord.wait_for_message(
        world.channel, lambda m: f"-# run {child_id[:8]}" in m["content"] and "running" in m["content"]
    )

    inter = await world.discord.click_button(admin, status, f"run:kill:{child_id}")
    assert (await world.discord.wait_followup(inter))["content"] == "killed Dig deeper."
    await world.until(f"SELECT status FROM runs WHERE id = '{child_id}'", [("killed",)])
