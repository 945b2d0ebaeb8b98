"""What people do to a server's schedules (the core of /schedule): each bad input refused with its own message
before anything is written, names unique in a server, config.toml's schedules listed but removed only there,
every change audited."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from bot.core.errors import UserError
from bot.core.people.schedule_control import ScheduleControl
from bot.records import ScheduleSource, ScheduleSpec
from tests.db_views import audit_entries, cron_runs
from tests.test_schedules import HOURLY, Clock, Researcher, at, core

CONFIG = HOURLY + "[agents.list.retired]\nenabled = false\n"
GUILD, OTHER_GUILD, ADMIN = 1, 2, 77
HERE = {500, 501}  # the server's channels: config.toml's "digest" posts in 500


def spec(**overrides) -> ScheduleSpec:
    values = dict(
        name="standup", cron="0 9 * * 1-5", timezone="UTC", agent_id="main", prompt="Remind us", channel_id=501
    )
    return ScheduleSpec(**{**values, **overrides})


@pytest.fixture
async def control(tmp_path):
    clock = Clock("2024-01-05 10:30")  # a Friday
    async with core(tmp_path, clock, Researcher(), CONFIG) as orchestrator:
        yield (
            ScheduleControl(orchestrator.core.ctx, orchestrator.schedules),
            orchestrator,
            clock,
        )


async def test_add_list_and_remove_with_an_audit_row_each(control):
    schedules, orchestrator, _ = control
    added = await schedules.add(
        spec(name=" standup ", cron=" 0  9 * * 1-5 "), guild_id=GUILD, actor_user_id=ADMIN, channel_ids=HERE
    )
    assert (added.schedule.spec.name, added.schedule.spec.cron, added.schedule.source) == (
        "standup",
        "0 9 * * 1-5",
        ScheduleSource.SLASH,
    )
    assert (added.schedule.guild_id, added.schedule.created_by, added.next_at) == (GUILD, ADMIN, at("2024-01-08 09:00"))

    listing = await schedules.listing(GUILD, HERE)
    assert [(v.schedule.spec.name, v.schedule.source, v.next_at) for v in listing] == [
        ("digest", ScheduleSource.CONFIG, at("2024-01-05 11:00")),
        ("standup", ScheduleSource.SLASH, at("2024-01-08 09:00")),
    ]
    assert await schedules.listing(OTHER_GUILD, {900}) == []

    removed = await schedules.remove("standup", guild_id=GUILD, actor_user_id=ADMIN, channel_ids=HERE)
    assert removed.id == added.schedule.id
    assert [v.schedule.spec.name for v in await schedules.listing(GUILD, HERE)] == ["digest"]
    rows = await audit_entries(orchestrator)
    assert [(row.guild_id, row.actor_user_id, row.action, row.detail) for row in rows] == [
        (GUILD, ADMIN, "schedule add", 'standup: cron "0 9 * * 1-5" UTC, agent main, channel 501'),
        (GUILD, ADMIN, "schedule remove", "standup"),
    ]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"cron": "61 * * * *"},
            '"61 * * * *" is not a valid cron expression: minute "61": the last value (61) is higher than the maximum '
            "value (59).",
        ),
        ({"cron": "0 9 * *"}, '"0 9 * *" is not a valid cron expression: it has 4 field(s); write 5: minute hour'),
        ({"timezone": "Mars/Base"}, '"Mars/Base" is not a known time zone; use an IANA name such as "Europe/Madrid".'),
        ({"agent_id": "ghost"}, 'Unknown agent "ghost". Configured agents: main, researcher, retired.'),
        ({"agent_id": "retired"}, 'Agent "retired" is disabled (agents.list.retired.enabled = false).'),
        ({"prompt": " \u200b "}, "Prompt must not be empty."),
        ({"prompt": "x" * 4001}, "Prompt is too long (4,001 characters; the limit is 4,000)."),
        ({"name": "   "}, "Name must not be empty."),
        ({"name": "n" * 101}, "Name is too long (101 characters; the limit is 100)."),
        ({"name": "digest"}, 'There is already a schedule named "digest" in this server; pick another name.'),
    ],
)
async def test_bad_input_is_refused_with_its_own_message_and_nothing_is_written(control, overrides, message):
    schedules, orchestrator, _ = control
    with pytest.raises(UserError) as refused:
        await schedules.add(spec(**overrides), guild_id=GUILD, actor_user_id=ADMIN, channel_ids=HERE)
    assert str(refused.value).startswith(message), str(refused.value)
    assert [v.schedule.spec.name for v in await schedules.listing(GUILD, HERE)] == ["digest"]
    assert await audit_entries(orchestrator) == []


async def test_names_are_unique_per_server(control):
    schedules, _, _ = control
    await schedules.add(spec(), guild_id=GUILD, actor_user_id=ADMIN, channel_ids=HERE)
    await schedules.add(spec(channel_id=900), guild_id=OTHER_GUILD, actor_user_id=ADMIN, channel_ids={900})
    with pytest.raises(UserError, match="already a schedule named"):
        await schedules.add(spec(), guild_id=GUILD, actor_user_id=ADMIN, channel_ids=HERE)
    assert [v.schedule.guild_id for v in await schedules.listing(OTHER_GUILD, {900})] == [OTHER_GUILD]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("digest", 'Schedule "digest" is defined in config.toml; remove it there.'),
        ("nightly", 'There is no schedule named "nightly" in this server.'),
    ],
)
async def test_removing_what_cannot_be_removed_here_is_refused(control, name, message):
    schedules, _, _ = control
    with pytest.raises(UserError) as refused:
        await schedules.remove(name, guild_id=GUILD, actor_user_id=ADMIN, channel_ids=HERE)
    assert str(refused.value) == message


async def test_another_servers_schedule_is_not_removed_from_here(control):
    schedules, _, _ = control
    await schedules.add(spec(channel_id=900), guild_id=OTHER_GUILD, actor_user_id=ADMIN, channel_ids={900})
    with pytest.raises(UserError, match='no schedule named "standup"'):
        await schedules.remove("standup", guild_id=GUILD, actor_user_id=ADMIN, channel_ids=HERE)


async def test_a_servers_schedule_fires_on_behalf_of_whoever_added_it(control):
    schedules, orchestrator, clock = control
    added = await schedules.add(spec(), guild_id=GUILD, actor_user_id=ADMIN, channel_ids=HERE)
    clock.set("2024-01-08 09:00:03")
    run = await orchestrator.runs.get(await orchestrator.schedules.fire_due(added.schedule.id))
    assert (run.task, run.requester_user_id, run.guild_id, run.channel_id) == (
        f"[cron:{added.schedule.id} standup] Remind us",
        ADMIN,
        GUILD,
        501,
    )


async def test_a_schedule_whose_agent_left_the_config_is_skipped_with_a_log_line(tmp_path):
    clock = Clock("2024-01-05 10:30")
    async with core(tmp_path, clock, Researcher(), CONFIG) as orchestrator:
        control = ScheduleControl(orchestrator.core.ctx, orchestrator.schedules)
        await control.add(spec(agent_id="researcher"), guild_id=GUILD, actor_user_id=ADMIN, channel_ids=HERE)
    without_researcher = '[agents.defaults]\nmodel = "test/main"\n[agents.list.main]\n'
    clock.set("2024-01-08 09:00:30")
    with capture_logs() as logs:
        for _ in range(2):
            async with core(tmp_path, clock, Researcher(), without_researcher) as orchestrator:
                assert await cron_runs(orchestrator) == []
    (skipped,) = [line for line in logs if line["event"] == "schedule_skipped"]
    assert skipped["reason"] == 'Unknown agent "researcher". Configured agents: main.'
    assert skipped["slot"] == "2024-01-08T09:00:00+00:00"
