"""The webhook kept per parent channel for sub-agent personas."""

from __future__ import annotations

from storage.db import Connection, Database


class WebhookRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, channel_id: int) -> tuple[int, str] | None:
        row = await self._db.fetch_one(
            "SELECT webhook_id, token FROM channel_webhooks WHERE channel_id = ?", (channel_id,)
        )
        return (row[0], row[1]) if row else None

    async def put(self, tx: Connection, channel_id: int, webhook_id: int, token: str) -> None:
        await tx.execute(
            "INSERT INTO channel_webhooks (channel_id, webhook_id, token) VALUES (?, ?, ?) ON CONFLICT (channel_id) "
            "DO UPDATE SET webhook_id = excluded.webhook_id, token = excluded.token",
            (channel_id, webhook_id, token),
        )

    async def forget(self, tx: Connection, channel_id: int) -> None:
        await tx.execute("DELETE FROM channel_webhooks WHERE channel_id = ?", (channel_id,))
