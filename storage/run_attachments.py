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
            await tx.execute(
                f"INSERT INTO run_attachments (run_id, position, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    position,
                    item.name,
                    item.url,
                    item.sha256,
                    item.size,
                    item.kind.value,
                    item.media_type,
                    item.text,
                ),
            )

    async def of_run(self, run_id: str) -> list[Attachment]:
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM run_attachments WHERE run_id = ? ORDER BY position", (run_id,)
        )
        return [
            Attachment(
                name=name,
                url=url,
                sha256=sha256,
                size=size,
                kind=AttachmentKind(kind),
                media_type=media_type,
                text=text,
            )
            for name, url, sha256, size, kind, media_type, text in rows
        ]

    async def of_session(self, session_key: str) -> list[tuple[str, Attachment]]:
        """Every run's attachments in a session, oldest run first, as ``(run_id, attachment)``."""
        rows = await self._db.fetch_all(
            f"SELECT a.run_id, {', '.join('a.' + c for c in _COLUMNS.split(', '))} FROM run_attachments a "
            "JOIN runs r ON r.id = a.run_id WHERE r.session_key = ? ORDER BY r.created_at, a.run_id, a.position",
            (session_key,),
        )
        return [
            (run_id, Attachment(name, url, sha256, size, AttachmentKind(kind), media_type, text))
            for run_id, name, url, sha256, size, kind, media_type, text in rows
        ]
