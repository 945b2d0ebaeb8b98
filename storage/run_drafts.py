"""Run drafts repository: the messages an answer fills while it is written, by run."""

from __future__ import annotations

import json
from dataclasses import dataclass

from storage.db import Connection, Database


@dataclass(frozen=True)
class RunDraft:
    run_id: str
    channel_id: int
    message_ids: tuple[int, ...]
    webhook_id: int | None  # posted under the agent's persona through this webhook (None: as the bot)


class RunDraftRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, run_id: str) -> RunDraft | None:
        row = await self._db.fetch_one(
            "SELECT run_id, channel_id, message_ids, webhook_id FROM run_drafts WHERE run_id = ?", (run_id,)
        )
        if row is None:
            return None
        return RunDraft(row[0], int(row[1]), tuple(json.loads(row[2])), None if row[3] is None else int(row[3]))

    async def put(self, draft: RunDraft, now: float) -> None:
        """Record the draft's messages, the first time or after it grew by a message."""
        async with self._db.transaction() as tx:
            await tx.execute(
                "INSERT INTO run_drafts (run_id, channel_id, message_ids, webhook_id, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET message_ids = excluded.message_ids, "
                "updated_at = excluded.updated_at",
                (draft.run_id, draft.channel_id, json.dumps(list(draft.message_ids)), draft.webhook_id, now),
            )

    async def delete(self, tx: Connection, run_id: str) -> None:
        """The draft is the answer now (or gone): nothing is written over it again."""
        await tx.execute("DELETE FROM run_drafts WHERE run_id = ?", (run_id,))

    async def forget(self, run_id: str) -> None:
        """:meth:`delete`, in a transaction of its own."""
        async with self._db.transaction() as tx:
            await self.delete(tx, run_id)
