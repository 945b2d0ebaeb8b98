"""Crontab expressions as people write them, as APScheduler triggers that keep crontab's meaning.

People write five fields, ``minute hour day-of-month month day-of-week``. The triggers keep crontab's meaning where
APScheduler 3 departs from it:

- crontab's day-of-week 0 (and 7) is Sunday; APScheduler 3 counts from Monday (a mistake it documents and
  keeps), so that field is read here and handed over as day names;
- when day-of-month and day-of-week are both restricted (neither starts with ``*``), crontab fires on a day
  matching either; APScheduler would require both, so the two halves are joined with an ``OrTrigger``.

Also which slot is due at a given moment, so a schedule fires a missed slot once, late, rather than never or
several times (see :func:`due`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.combining import OrTrigger
from apscheduler.triggers.cron import CronTrigger

FIELDS = ("minute", "hour", "day", "month", "day_of_week")
LABELS = ("minute", "hour", "day-of-month", "month", "day-of-week")
DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # crontab's order: 0 (and 7) is Sunday
_WEEKDAY_PART = re.compile(r"^(?:(\*)|([a-z0-9]+)(?:-([a-z0-9]+))?)(?:/(\d+))?$")
_APSCHEDULER_PREFIX = re.compile(r"^Error validating expression '[^']*': ")


class CronError(ValueError):
    """A crontab expression that cannot be scheduled, worded for the person who wrote it."""


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (``UTC``, ``Europe/Madrid``), or ``ValueError`` saying it is unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f'"{name}" is not a known time zone; use an IANA name such as "Europe/Madrid"') from None


def cron_trigger(expression: str, zone: str = "UTC") -> BaseTrigger:
    """The trigger for ``expression`` in time zone ``zone``; :class:`CronError` names the field at fault."""
    fields = expression.split()
    if len(fields) != len(FIELDS):
        raise CronError(f"it has {len(fields)} field(s); write 5: {' '.join(LABELS)}")
    tz = time_zone(zone)
    for name, label, value in zip(FIELDS[:4], LABELS, fields, strict=False):
        try:
            CronTrigger(**{name: value}, timezone=tz)
        except ValueError as error:
            raise CronError(f'{label} "{value}": {_APSCHEDULER_PREFIX.sub("", str(error))}') from None
    minute, hour, day, month, weekday = fields
    weekdays = _weekdays(weekday)
    if day.startswith("*") or weekday.startswith("*"):
        trigger: BaseTrigger = CronTrigger(
            minute=minute, hour=hour, day=day, month=month, day_of_week=weekdays, timezone=tz
        )
    else:
        trigger = OrTrigger(
            [
                CronTrigger(minute=minute, hour=hour, day=day, month=month, timezone=tz),
                CronTrigger(minute=minute, hour=hour, month=month, day_of_week=weekdays, timezone=tz),
            ]
        )
    if trigger.get_next_fire_time(None, datetime.now(UTC)) is None:
        raise CronError("no date matches it, so it would never fire")
    return trigger


def _weekdays(field: str) -> str:
    """Crontab's day-of-week field as APScheduler day names (``*`` when every day is in it)."""
    days: set[int] = set()
    for part in field.lower().split(","):
        match = _WEEKDAY_PART.match(part)
        if match is None:
            raise CronError(f'day-of-week "{field}": cannot read "{part}"; use 0-7 or sun-sat, ranges, lists, steps')
        every, first, last, step = match.groups()
        low, high = (0, 6) if every else (_weekday(field, first), _weekday(field, last) if last else None)
        if high is None:
            high = 6 if step else low
        if low > high:
            raise CronError(f'day-of-week "{field}": the range "{part}" goes backwards')
        if step is not None and int(step) == 0:
            raise CronError(f'day-of-week "{field}": the step in "{part}" must be at least 1')
        days |= {day % 7 for day in range(low, high + 1, int(step or 1))}
    return "*" if len(days) == 7 else ",".join(DAY_NAMES[day] for day in sorted(days))


def _weekday(field: str, value: str) -> int:
    if value.isdigit() and int(value) <= 7:
        return int(value)
    if value in DAY_NAMES:
        return DAY_NAMES.index(value)
    raise CronError(f'day-of-week "{field}": "{value}" is not a day; use 0-7 (0 and 7 are Sunday) or sun-sat')


def slot_from(trigger: BaseTrigger, start: float) -> float | None:
    """The first time the trigger fires at or after ``start``, or ``None`` if never.

    ``start`` and the answer are epoch seconds."""
    fire = trigger.get_next_fire_time(None, datetime.fromtimestamp(start, UTC))
    return fire.timestamp() if fire is not None else None


def next_slot(trigger: BaseTrigger, after: float) -> float | None:
    """The first time the trigger fires strictly after ``after`` (cron slots are whole seconds)."""
    fire = trigger.get_next_fire_time(None, datetime.fromtimestamp(after, UTC) + timedelta(microseconds=1))
    return fire.timestamp() if fire is not None else None


@dataclass(frozen=True)
class Due:
    """What a schedule should do at a moment: fire ``slot`` (standing for ``slots`` unclaimed slots, coalesced
    into one firing), skip slots too old to fire (``oldest_skipped`` is the first of them), or nothing."""

    slot: float | None
    slots: int
    oldest_skipped: float | None
    claim_through: float  # the slot fired, else the grace horizon when slots were skipped, else unchanged


def due(trigger: BaseTrigger, claimed_through: float, now: float, grace: float) -> Due:
    """The slot to fire at ``now``: the latest one after ``claimed_through`` and no older than ``grace``."""
    first = next_slot(trigger, claimed_through)
    if first is None or first > now:
        return Due(None, 0, None, claimed_through)
    horizon = now - grace
    oldest_skipped = first if first < horizon else None
    candidate = first if oldest_skipped is None else slot_from(trigger, horizon)
    slot, slots = None, 0
    while candidate is not None and candidate <= now:
        slot, slots = candidate, slots + 1
        candidate = next_slot(trigger, candidate)
    return Due(slot, slots, oldest_skipped, slot if slot is not None else horizon)
