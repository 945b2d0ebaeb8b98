"""Crontab expressions as people write them: crontab's meaning where APScheduler 3 differs (Sunday is 0; a day
matching either restricted day field fires), errors naming the field, and which slot is due after downtime."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.cron import CronError, cron_trigger, due, next_slot

DAY = 24 * 3600


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def shown(when: float | None) -> str | None:
    return None if when is None else datetime.fromtimestamp(when, UTC).strftime("%a %Y-%m-%d %H:%M")


def slots(expression: str, start: str, count: int, zone: str = "UTC") -> list[str | None]:
    trigger, when, found = cron_trigger(expression, zone), at(start), []
    for _ in range(count):
        when = next_slot(trigger, when)
        found.append(shown(when))
    return found


def test_weekdays_count_from_sunday_as_in_crontab():
    saturday = "2024-01-06 00:00"
    assert slots("0 9 * * 1-5", saturday, 6) == [
        "Mon 2024-01-08 09:00",
        "Tue 2024-01-09 09:00",
        "Wed 2024-01-10 09:00",
        "Thu 2024-01-11 09:00",
        "Fri 2024-01-12 09:00",
        "Mon 2024-01-15 09:00",
    ]
    assert slots("0 9 * * 0", saturday, 1) == slots("0 9 * * 7", saturday, 1) == ["Sun 2024-01-07 09:00"]
    assert slots("30 18 * * SAT,sun", saturday, 3) == [
        "Sat 2024-01-06 18:30",
        "Sun 2024-01-07 18:30",
        "Sat 2024-01-13 18:30",
    ]
    assert slots("0 0 * * */3", saturday, 3) == ["Sun 2024-01-07 00:00", "Wed 2024-01-10 00:00", "Sat 2024-01-13 00:00"]


def test_a_day_matching_either_restricted_day_field_fires():
    assert slots("0 0 13 * 5", "2024-09-01 00:00", 7) == [
        "Fri 2024-09-06 00:00",
        "Fri 2024-09-13 00:00",
        "Fri 2024-09-20 00:00",
        "Fri 2024-09-27 00:00",
        "Fri 2024-10-04 00:00",
        "Fri 2024-10-11 00:00",
        "Sun 2024-10-13 00:00",
    ]


def test_fields_are_read_in_the_time_zone_given():
    assert slots("0 9 * * *", "2024-01-01 00:00", 1, "Europe/Madrid") == ["Mon 2024-01-01 08:00"]
    assert slots("0 9 * * *", "2024-07-01 00:00", 1, "Europe/Madrid") == ["Mon 2024-07-01 07:00"]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("61 * * * *", 'minute "61": the last value (61) is higher than the maximum value (59)'),
        ("*/0 * * * *", 'minute "*/0": Increment must be higher than 0'),
        ("0 24 * * *", 'hour "24": the last value (24) is higher than the maximum value (23)'),
        ("0 0 0 * *", 'day-of-month "0": the first value (0) is lower than the minimum value (1)'),
        ("0 0 * 13 *", 'month "13": the last value (13) is higher than the maximum value (12)'),
        ("0 0 * * 8", 'day-of-week "8": "8" is not a day; use 0-7 (0 and 7 are Sunday) or sun-sat'),
        ("0 0 * * 5-1", 'day-of-week "5-1": the range "5-1" goes backwards'),
        ("0 0 * * L", 'day-of-week "L": "l" is not a day; use 0-7 (0 and 7 are Sunday) or sun-sat'),
        ("* * * *", "it has 4 field(s); write 5: minute hour day-of-month month day-of-week"),
        ("0 0 * * * *", "it has 6 field(s); write 5: minute hour day-of-month month day-of-week"),
        ("0 0 30 2 *", "no date matches it, so it would never fire"),
    ],
)
def test_a_bad_expression_is_refused_naming_the_field(expression, message):
    with pytest.raises(CronError) as refused:
        cron_trigger(expression)
    assert str(refused.value) == message


def test_an_unknown_time_zone_is_refused():
    with pytest.raises(ValueError, match=r'^"Mars/Base" is not a known time zone; use an IANA name such as'):
        cron_trigger("0 9 * * *", "Mars/Base")


HOURLY = cron_trigger("0 * * * *")


def test_nothing_is_due_before_the_next_slot_and_the_slot_is_due_from_its_first_second():
    fired = at("2024-01-01 10:00")
    assert due(HOURLY, fired, at("2024-01-01 10:59:59"), DAY).slot is None
    assert shown(due(HOURLY, fired, at("2024-01-01 11:00"), DAY).slot) == "Mon 2024-01-01 11:00"
    assert due(HOURLY, at("2024-01-01 11:00"), at("2024-01-01 11:00:30"), DAY).slot is None  # claimed: not again


def test_missed_slots_coalesce_into_the_latest():
    result = due(HOURLY, at("2024-01-01 10:00"), at("2024-01-01 13:20"), DAY)
    assert (shown(result.slot), result.slots, result.oldest_skipped) == ("Mon 2024-01-01 13:00", 3, None)
    assert result.claim_through == at("2024-01-01 13:00")


def test_slots_older_than_the_grace_are_skipped_and_the_rest_coalesce():
    result = due(HOURLY, at("2024-01-01 10:00"), at("2024-01-03 10:30"), DAY)
    assert shown(result.oldest_skipped) == "Mon 2024-01-01 11:00"
    assert (shown(result.slot), result.slots) == ("Wed 2024-01-03 10:00", 24)


def test_when_every_missed_slot_is_too_old_nothing_fires_and_they_are_claimed_through_the_horizon():
    weekly = cron_trigger("0 9 * * 1")
    now = at("2024-01-09 12:00")
    result = due(weekly, at("2024-01-01 09:00"), now, DAY)
    assert (result.slot, shown(result.oldest_skipped), result.claim_through) == (
        None,
        "Mon 2024-01-08 09:00",
        now - DAY,
    )
    assert due(weekly, result.claim_through, now, DAY).slot is None


def test_a_slot_exactly_as_old_as_the_grace_still_fires():
    result = due(HOURLY, at("2024-01-01 08:00"), at("2024-01-02 10:00"), DAY)
    assert shown(result.oldest_skipped) == "Mon 2024-01-01 09:00"
    assert (shown(result.slot), result.slots) == ("Tue 2024-01-02 10:00", 25)  # 10:00 on the 1st to 10:00 on the 2nd
