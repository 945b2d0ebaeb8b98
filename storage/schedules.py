"""Schedules repository: scheduled agent jobs, and the claim that makes each of their slots fire once."""

from __future__ import annotations

from bot.records import Schedule, ScheduleSource, ScheduleSpec
from storage.db import Connection, Database, Row

_SPEC = "name, cron, timezone, agent_id, prompt, channel_id"
_COLUMNS = f"id, {_SPEC}, source, guild_id, created_by, created_at, claimed_through, last_fired_at, last_run_id"


def _from_row(row: Row) -> Schedule:
    return Schedule(
        id=row["id"],
        spec=ScheduleSpec(*(row[name] for name in _SPEC.split(", "))),
        source=ScheduleSource(row["source"]),
        guild_id=row["guild_id"],
        created_by=row["created_by"],
        created_at=row["created_at"],
        claimed_through=row["claimed_through"],
        last_fired_at=row["last_fired_at"],
        last_run_id=row["last_run_id"],
    )


def _spec_values(spec: ScheduleSpec) -> tuple[object, ...]:
    return (spec.name, spec.cron, spec.timezone, spec.agent_id, spec.prompt, spec.channel_id)


class ScheduleRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def all(self, tx: Connection | None = None) -> list[Schedule]:
        sql = f"SELECT {_COLUMNS} FROM schedules ORDER BY id"
        rows = await (tx or self._db).fetch_all(sql)
        return [_from_row(row) for row in rows]

    async def get(self, schedule_id: int) -> Schedule | None:
        row = await self._db.fetch_one(f"SELECT {_COLUMNS} FROM schedules WHERE id = ?", (schedule_id,))
        return _from_row(row) if row else None

    async def add(
        self,
        tx: Connection,
        spec: ScheduleSpec,
        *,
        source: ScheduleSource,
        guild_id: int | None,
        created_by: int | None,
        now: float,
    ) -> int:
        """A new schedule; its first slot is the first one after ``now``."""
        row = await tx.fetch_one(
            f"INSERT INTO schedules ({_SPEC}, source, guild_id, created_by, created_at, claimed_through) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (*_spec_values(spec), source.value, guild_id, created_by, now, now),
        )
        assert row is not None, "an INSERT … RETURNING returns its row"
        return int(row[0])

    async def redefine(self, tx: Connection, schedule_id: int, spec: ScheduleSpec, claimed_through: float) -> None:
        await tx.execute(
            "UPDATE schedules SET name = ?, cron = ?, timezone = ?, agent_id = ?, prompt = ?, channel_id = ?, "
            "claimed_through = ? WHERE id = ?",
            (*_spec_values(spec), claimed_through, schedule_id),
        )

    async def remove(self, tx: Connection, schedule_id: int) -> bool:
        changed = await tx.execute("DELETE FROM schedules WHERE id = ?", (schedule_id,))
        return changed == 1

    async def claim(self, tx: Connection, schedule_id: int, through: float, *, run_id: str | None = None) -> bool:
        """Move ``claimed_through`` forward to ``through``, unless someone claimed that far already.

        ``through`` is a slot fired by ``run_id``, or (without one) the end of slots skipped. False: the slot is
        already taken."""
        fired = run_id is not None
        changed = await tx.execute(
            "UPDATE schedules SET claimed_through = :through, "
            "last_fired_at = CASE WHEN :fired THEN :through ELSE last_fired_at END, "
            "last_run_id = CASE WHEN :fired THEN :run_id ELSE last_run_id END "
            "WHERE id = :id AND claimed_through < :through",
            {"through": through, "fired": fired, "run_id": run_id, "id": schedule_id},
        )
        return changed == 1
