"""Outbox repository: durable rows for everything that must reach Discord, delivered at least once by the
worker and made exactly-once by the idempotency key (unique here, and sent to Discord as the message nonce).

Rows of one channel are delivered oldest first; different channels independently. Several processes may share the
outbox: a process delivers a row only once it has claimed it (``claimed_by`` its executor id, until ``claim_until``,
a lease it renews while delivering); the others leave the row, and so its channel, alone until the lease runs out —
a process that died mid-delivery leaves a claim that expires, and another takes the row over. A row that cannot be
delivered ends ``failed`` in the same transaction that adds the notice telling its requester (``notice`` says
where that row goes), so a crash can neither lose the notice nor send it twice.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from storage.db import Connection, Database, Row

NoticeVia = Literal["parent_channel", "dm"]

_COLUMNS = (
    "id, idempotency_key, run_id, channel_id, payload_json, status, parts_sent, message_ids_json, attempts, "
    "next_attempt_at, last_error, created_at, delivered_at, first_failed_at, notice, claimed_by, claim_until, "
    "last_error_words"
)


@dataclass(frozen=True)
class OutboxRow:
    id: int
    idempotency_key: str
    run_id: str | None
    channel_id: int
    payload_json: str
    status: str
    parts_sent: int
    message_ids: list[int]
    attempts: int
    next_attempt_at: float
    last_error: str | None
    created_at: float
    delivered_at: float | None
    first_failed_at: float | None
    notice: NoticeVia | None  # None: an announcement; else a notice that another row failed, and where
    claimed_by: str | None  # the process delivering it; on a pending row just claimed: one that let go unfinished
    claim_until: float | None  # the claim's lease; None once released
    last_error_words: str | None = None  # last_error as words to put in a reader's language (JSON), when known


@dataclass(frozen=True)
class NewNotice:
    """The row that tells a failed row's requester, added together with the failure."""

    key: str
    channel_id: int
    via: NoticeVia
    payload_json: str


def _from_row(row: Row) -> OutboxRow:
    values = {name: value for name, value in zip(row.keys(), row, strict=True) if name != "message_ids_json"}
    return OutboxRow(**values, message_ids=json.loads(row["message_ids_json"]))


class OutboxRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def enqueue(
        self,
        tx: Connection,
        *,
        key: str,
        run_id: str | None,
        channel_id: int,
        payload_json: str,
        now: float,
        notice: NoticeVia | None = None,
    ) -> bool:
        """Add a row unless one with this key exists; returns whether a row was added."""
        changed = await tx.execute(
            "INSERT INTO outbox (idempotency_key, run_id, channel_id, payload_json, next_attempt_at, "
            "created_at, notice) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (key, run_id, channel_id, payload_json, now, now, notice),
        )
        return changed == 1

    async def heads(self) -> list[tuple[int, float]]:
        """Each channel's oldest pending row as ``(channel_id, when it can be taken)``, soonest first.

        It can be taken when it is due, or, while a process holds it, when that claim's lease runs out."""
        rows = await self._db.fetch_all(
            "SELECT channel_id, CASE WHEN claim_until > next_attempt_at THEN claim_until ELSE next_attempt_at END "
            "AS takeable_at FROM outbox WHERE id IN "
            "(SELECT MIN(id) FROM outbox WHERE status = 'pending' GROUP BY channel_id) ORDER BY takeable_at"
        )
        return [(row[0], row[1]) for row in rows]

    async def claim_head(self, channel_id: int, owner: str, now: float, until: float) -> OutboxRow | None:
        """Claim the channel's oldest pending row for ``owner`` until ``until``; ``None``: nothing to take now.

        Later rows of the channel wait for it. It is claimed if it is due and no claim on it is alive. Returns the
        row as it was before, so its ``claimed_by`` tells whether a process that held it let go unfinished."""
        async with self._db.transaction() as tx:
            row = await tx.fetch_one(
                f"SELECT {_COLUMNS} FROM outbox WHERE id = "
                "(SELECT MIN(id) FROM outbox WHERE status = 'pending' AND channel_id = ?) "
                "AND status = 'pending' AND next_attempt_at <= ? AND (claim_until IS NULL OR claim_until <= ?)"
                f"{self._db.skip_locked}",
                (channel_id, now, now),
            )
            if row is None:
                return None
            await tx.execute(
                "UPDATE outbox SET claimed_by = ?, claim_until = ? WHERE id = ?", (owner, until, row["id"])
            )
        return _from_row(row)

    async def renew(self, row_id: int, owner: str, held_until: float, until: float) -> bool:
        """Extend ``owner``'s claim (the one that ran until ``held_until``) to ``until``; False: the claim is gone
        — it lapsed and another process took the row over."""
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE outbox SET claim_until = ? WHERE id = ? AND status = 'pending' AND claimed_by = ? "
                "AND claim_until = ?",
                (until, row_id, owner, held_until),
            )
        return changed == 1

    async def release_claims(self, tx: Connection, owner: str) -> int:
        """End ``owner``'s claims without waiting out their leases.

        It is closing, or its previous life died holding them. Who takes such a row next still sees who held it,
        and reads back what may already be posted."""
        changed = await tx.execute(
            "UPDATE outbox SET claim_until = NULL WHERE claimed_by = ? AND status = 'pending' "
            "AND claim_until IS NOT NULL",
            (owner,),
        )
        return changed

    async def retry_pending_now(self, tx: Connection, now: float) -> int:
        """Make every undelivered row due at once.

        A fresh process need not wait out an old backoff."""
        changed = await tx.execute(
            "UPDATE outbox SET next_attempt_at = ? WHERE status = 'pending' AND next_attempt_at > ?", (now, now)
        )
        return changed

    async def record_part(self, tx: Connection, row_id: int, parts_sent: int, message_ids: list[int]) -> None:
        await tx.execute(
            "UPDATE outbox SET parts_sent = ?, message_ids_json = ? WHERE id = ?",
            (parts_sent, json.dumps(list(message_ids)), row_id),
        )

    async def mark_delivered(
        self, tx: Connection, row_id: int, now: float, parts_sent: int, message_ids: Sequence[int]
    ) -> None:
        """Delivered, with its parts recorded by the same statement (the last part's own record)."""
        await tx.execute(
            "UPDATE outbox SET status = 'delivered', delivered_at = ?, claim_until = NULL, parts_sent = ?, "
            "message_ids_json = ? WHERE id = ?",
            (now, parts_sent, json.dumps(list(message_ids)), row_id),
        )

    async def schedule_retry(
        self,
        tx: Connection,
        row_id: int,
        attempts: int,
        next_attempt_at: float,
        error: str,
        now: float,
        error_words: str | None = None,
    ) -> None:
        """Try again later, releasing the claim (any process may take the retry). The give-up bound counts from the
        first failure — for the rows waiting behind this one in its channel too, so the last of them is not told
        days after the first."""
        await tx.execute(
            "UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ?, last_error_words = ?, "
            "claimed_by = NULL, claim_until = NULL WHERE id = ?",
            (attempts, next_attempt_at, error, error_words, row_id),
        )
        await tx.execute(
            "UPDATE outbox SET first_failed_at = COALESCE(first_failed_at, ?) WHERE status = 'pending' "
            "AND channel_id = (SELECT channel_id FROM outbox WHERE id = ?)",
            (now, row_id),
        )

    async def mark_failed(
        self,
        tx: Connection,
        row: OutboxRow,
        attempts: int,
        error: str,
        notice: NewNotice | None,
        now: float,
        error_words: str | None = None,
    ) -> None:
        """End ``row`` as failed, and tell its requester.

        The notice is added in the same transaction."""
        await tx.execute(
            "UPDATE outbox SET status = 'failed', attempts = ?, last_error = ?, last_error_words = ?, "
            "first_failed_at = COALESCE(first_failed_at, ?), claim_until = NULL WHERE id = ?",
            (attempts, error, error_words, now, row.id),
        )
        if notice is not None:
            await self.enqueue(
                tx,
                key=notice.key,
                run_id=row.run_id,
                channel_id=notice.channel_id,
                payload_json=notice.payload_json,
                now=now,
                notice=notice.via,
            )

    async def posted_in_channel(self, channel_id: int, *, since: float) -> set[int]:
        """Ids of the messages rows recorded posting in ``channel_id``.

        Rows still going on, or done since ``since``: a read-back must not take one of them for another part."""
        rows = await self._db.fetch_all(
            "SELECT message_ids_json FROM outbox WHERE channel_id = ? AND parts_sent > 0 "
            "AND (delivered_at IS NULL OR delivered_at >= ?)",
            (channel_id, since),
        )
        return {message_id for row in rows for message_id in json.loads(row[0])}

    async def for_run(self, run_id: str) -> list[OutboxRow]:
        """The run's announcement and the notices about it, oldest first."""
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM outbox WHERE run_id = ? ORDER BY id", (run_id,))
        return [_from_row(row) for row in rows]
