"""``[[schedules]]`` in config.toml: what a valid entry gives, and every problem as one line naming the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config import ConfigError, parse_config

AGENTS = """
[agents.list.main]
[agents.list.researcher]
[agents.list.retired]
enabled = false
"""


def entry(**overrides: object) -> str:
    values: dict[str, object] = {
        "name": "digest",
        "cron": "0 9 * * 1-5",
        "agent": "researcher",
        "prompt": "Summarise the day",
        "channel_id": 42,
        **overrides,
    }
    lines = [f"{key} = {value!r}".replace("'", '"') for key, value in values.items() if value is not None]
    return "[[schedules]]\n" + "\n".join(lines) + "\n"


def error_for(text: str) -> str:
    with pytest.raises(ConfigError) as error:
        parse_config(AGENTS + text)
    return str(error.value)


def test_an_entry_is_read_with_utc_by_default():
    config = parse_config(AGENTS + entry() + entry(name="weekly", cron="0 8 * * 1", timezone="Europe/Madrid"))
    first, second = config.schedules
    assert (first.name, first.cron, first.agent, first.prompt, first.channel_id, first.timezone) == (
        "digest",
        "0 9 * * 1-5",
        "researcher",
        "Summarise the day",
        42,
        "UTC",
    )
    assert second.timezone == "Europe/Madrid"
    assert parse_config(AGENTS).schedules == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            entry(cron="61 * * * *"),
            'schedules[0].cron = "61 * * * *" is not a valid cron expression: minute "61": the last value (61) is '
            "higher than the maximum value (59)",
        ),
        (
            entry(cron="0 9 * *"),
            'schedules[0].cron = "0 9 * *" is not a valid cron expression: it has 4 field(s); write 5: minute hour '
            "day-of-month month day-of-week",
        ),
        (
            entry(timezone="Mars/Base"),
            'schedules[0].timezone = "Mars/Base" is not a known time zone; use an IANA name such as "Europe/Madrid"',
        ),
        (entry(agent="ghost"), 'schedules[0].agent = "ghost" but agents.list.ghost is not configured'),
        (entry(agent="retired"), 'schedules[0].agent = "retired" but agents.list.retired.enabled = false'),
        (entry(prompt=" \u200b "), "schedules[0].prompt is empty; write what the agent should do"),
        (entry(name="  "), "schedules[0].name is empty; give the schedule a name"),
        (
            entry() + entry(name=" digest ", cron="0 10 * * *"),
            'schedules[1].name = "digest" is also the name of schedules[0]; names must be unique',
        ),
        (entry(name="a") + entry(name="b", agent="ghost"), 'schedules[1].agent = "ghost" but agents.list.ghost'),
    ],
)
def test_each_problem_stops_start_up_with_one_line_naming_the_key(text, message):
    error = error_for(text)
    assert error.startswith(f"config: {message}") and "\n" not in error


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (entry(name=None), "missing key 'schedules.0.name'"),
        (entry(channel_id=None), "missing key 'schedules.0.channel_id'"),
        (entry(channel_id=0), "'schedules.0.channel_id': Input should be greater than 0"),
        (entry(channel_id="general"), "'schedules.0.channel_id': Input should be a valid integer"),
        (entry(every="day"), "unknown key 'schedules.0.every'"),
    ],
)
def test_missing_unknown_and_mistyped_keys_are_named(text, expected):
    assert expected in error_for(text)


def test_the_example_configs_schedule_is_valid_once_uncommented():
    example = Path("config.example.toml").read_text()
    block = re.search(r"^# \[\[schedules\]\]\n(?:#.*\n)*", example, re.MULTILINE)
    assert block is not None
    uncommented = re.sub(r"^# ?", "", block.group(0), flags=re.MULTILINE)
    (schedule,) = parse_config(uncommented).schedules
    assert (schedule.name, schedule.cron, schedule.timezone, schedule.agent) == (
        "morning-digest",
        "0 9 * * 1-5",
        "Europe/Madrid",
        "main",
    )
