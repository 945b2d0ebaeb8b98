"""``/usage`` over the wire: what a real run spent (the fake model reports its tokens), by agent and against the
caps, privately, with the chart attached; another member's usage only for moderators."""

from __future__ import annotations

from tests.harness import announcement_for
from tests.test_usage_chart import PNG_MAGIC
from tests.test_wire_control import member, spawn

PRICED = """
[pricing."fake/gpt-4o-mini"]
input_per_mtok = 1000
output_per_mtok = 2000
[budgets]
member_tokens_per_day = 100000
"""
SPENT = "1 run • 1 request • tokens 1.5k (in 1.2k / out 300) • $1.80"  # 1,200 × $1000/M + 300 × $2000/M


async def usage(world, user, **options) -> dict:
    """Run ``/usage``; its private answer, after an acknowledgement within Discord's 3 seconds."""
    inter = await world.discord.slash(user, world.channel, "usage", **options)
    ack = await world.discord.wait_ack(inter)
    assert ack.status_code == 200 and ack.elapsed < 3 and ack.ephemeral
    reply = await world.discord.wait_followup(inter, timeout=20)
    assert reply["flags"] & 64, "usage is private"
    return reply


def attached(world, reply) -> list[tuple[str, bytes]]:
    return world.discord.message_files(reply["id"])


async def alice_ran_one(world) -> None:
    world.extra_config = PRICED
    world.llm.reply("found it", prompt_tokens=1200, completion_tokens=300)
    await world.start_bot()
    run_id = await spawn(world, task="Look it up")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))


async def test_own_usage_after_a_run_shows_its_tokens_cost_agent_and_caps_with_a_chart(world):
    await alice_ran_one(world)

    reply = await usage(world, world.alice)

    lines = reply["content"].splitlines()
    assert lines[0].startswith(f"**Usage of <@{world.alice.id}>, the last 7 days** (")
    assert lines[1:4] == [SPENT, "By agent:", f"- researcher: {SPENT}"]
    assert lines[4] == "Caps now:"
    # the default cap on a member's own runs in progress is among them, with nothing in progress now
    assert lines[5] == "- your runs in progress on this server: 0 of 10 runs (`member_concurrent_runs`)"
    assert lines[6].startswith(
        "- your tokens today on this server: 1,500 of 100,000 tokens (`member_tokens_per_day`). "
        "It resets at 00:00 UTC, in "
    )
    [(name, png)] = attached(world, reply)
    assert name == "usage.png" and png.startswith(PNG_MAGIC)

    today = await usage(world, world.alice, period="day")
    assert today["content"].splitlines()[1] == SPENT
    assert attached(world, today) == [], "a single day reads better as text"


async def test_a_moderator_sees_another_members_usage(world):
    await alice_ran_one(world)
    moderator = member(world, "mod", manage_messages=True)

    reply = await usage(world, moderator, member=world.alice, period="month")

    lines = reply["content"].splitlines()
    assert lines[0].startswith(f"**Usage of <@{world.alice.id}>, the last 30 days** (")
    assert lines[1] == SPENT
    assert lines[4] == f"Caps now, as <@{world.alice.id}> reads them:"
    assert lines[5] == "- your runs in progress on this server: 0 of 10 runs (`member_concurrent_runs`)"
    assert lines[6].startswith("- your tokens today on this server: 1,500 of 100,000 tokens")
    assert [name for name, _ in attached(world, reply)] == ["usage.png"]
    own = await usage(world, moderator)
    assert own["content"].splitlines()[1] == "No runs and no model requests."
    assert attached(world, own) == [], "an empty period has no chart"


async def test_a_member_who_does_not_moderate_cannot_see_anothers_usage(world):
    await alice_ran_one(world)
    bob = member(world, "bob")

    reply = await usage(world, bob, member=world.alice)

    assert reply["content"] == (
        "⚠️ Only moderators may see another member's usage; /usage without a member shows yours."
    )
    assert attached(world, reply) == []


async def test_usage_in_a_dm_is_the_dms_own_apart_from_the_servers(world):
    world.guild_commands = False  # synced globally: usable in DMs too
    world.extra_config = PRICED
    world.llm.reply("hello", prompt_tokens=40, completion_tokens=2)
    await world.start_bot()
    dm = world.discord.add_dm_channel(world.alice)
    await world.discord.send_user_message(world.alice, dm, "hi")
    await world.discord.wait_for_message(dm, lambda m: m["content"] == "hello")

    inter = await world.discord.slash(world.alice, dm, "usage", period="day")
    assert (await world.discord.wait_ack(inter)).ephemeral
    in_dm = await world.discord.wait_followup(inter)
    in_server = await usage(world, world.alice, period="day")

    spent = "1 run • 1 request • tokens 42 (in 40 / out 2) • $0.04"
    assert in_dm["content"].splitlines()[1:4] == [spent, "By agent:", f"- main: {spent}"]
    assert in_server["content"].splitlines()[1] == "No runs and no model requests."


async def test_a_chart_that_cannot_be_drawn_leaves_the_text_answer(world, monkeypatch):
    async def broken(days, locale=None):
        raise RuntimeError("no fonts")

    monkeypatch.setattr("bot.discord_adapter.usage_views.chart_png", broken)
    await alice_ran_one(world)
    reply = await usage(world, world.alice)
    assert reply["content"].splitlines()[1] == SPENT and attached(world, reply) == []
