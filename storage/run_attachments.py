"""Run attachment repository: the files a person attached to a run's prompt, in the order they attached them.

Kept by URL and hash, not the bytes, so a resumed run rebuilds the same prompt without downloading them again."""

from __future__ import annotations

from collections.abc import Sequence

from bot.records import Attachment, AttachmentKind
from storage.db import Connection, Database

_COLUMNS = "name, url, sha256, size, kind, media_type, text"


class RunAttachmentRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, tx: Connection, run_id: str, attachments: Sequence[Attachment]) -> None:
        for position, item in enumerate(attachments):
            values = (item.name, item.url, item.sha256, item.size, item.kind.value, item.media_type, item.text)
            await tx.execute(
                f"INSERT INTO run_attachments (run_id, position, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, position, *values),
            )

    async def of_run(self, run_id: str) -> list[Attachment]:
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM run_attachments WHERE run_id = ? ORDER BY position", (run_id,)
        )
        return [
            Attachment(name, url, sha256, size, AttachmentKind(kind), media_type, text)
            for name, url, sha256, size, kind, media_type, text in rows
        ]
