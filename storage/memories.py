"""Memories repository: what agent identities remember per server, found by full-text search.

Search is the database's own: SQLite's FTS5 table (``MATCH``, ranked by ``bm25``) or PostgreSQL's generated
``tsvector`` column (``@@``, ranked by ``ts_rank``), both with stemming. A query is reduced to its words, OR-ed and
quoted, so search syntax in what a model asks for cannot break the query or widen it.
"""

from __future__ import annotations

import json
import re

from bot.records import Memory
from storage.db import Connection, Database, Row

_COLUMNS = "id, agent_id, guild_id, key, content, created_by_user_id, session_key, run_id, created_at, auto_saved"
_M_COLUMNS = ", ".join(f"m.{column.strip()}" for column in _COLUMNS.split(","))
_WORDS = re.compile(r"\w+")
_MAX_QUERY_WORDS = 32
_ALLOWED = "m.guild_id = ? AND m.agent_id IN (SELECT value FROM json_each(?))"
_SQLITE_SEARCH = f"""
SELECT {_M_COLUMNS} FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
WHERE memories_fts MATCH ? AND {_ALLOWED}
ORDER BY bm25(memories_fts), m.created_at DESC LIMIT ?
"""
_POSTGRESQL_SEARCH = f"""
SELECT {_M_COLUMNS} FROM memories m, to_tsquery('english', ?) q
WHERE m.search @@ q AND {_ALLOWED}
ORDER BY ts_rank(m.search, q) DESC, m.created_at DESC LIMIT ?
"""


def _from_row(row: Row) -> Memory:
    values = dict(zip(row.keys(), row, strict=True))
    return Memory(**{**values, "auto_saved": bool(values["auto_saved"])})


def query_words(query: str) -> list[str]:
    """The words of a search, lower-cased, each once, in order (at most 32)."""
    return list(dict.fromkeys(word.lower() for word in _WORDS.findall(query)))[:_MAX_QUERY_WORDS]


class MemoryRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def count(self, tx: Connection, agent_id: str, guild_id: int) -> int:
        row = await tx.fetch_one(
            "SELECT COUNT(*) FROM memories WHERE agent_id = ? AND guild_id = ?", (agent_id, guild_id)
        )
        assert row is not None
        return int(row[0])

    async def by_key(self, tx: Connection, agent_id: str, guild_id: int, key: str) -> Memory | None:
        row = await tx.fetch_one(
            f"SELECT {_COLUMNS} FROM memories WHERE agent_id = ? AND guild_id = ? AND key = ?",
            (agent_id, guild_id, key),
        )
        return _from_row(row) if row else None

    async def find(self, agent_id: str, guild_id: int, key: str) -> Memory | None:
        """The agent's memory of ``key`` in the server, as committed."""
        row = await self._db.fetch_one(
            f"SELECT {_COLUMNS} FROM memories WHERE agent_id = ? AND guild_id = ? AND key = ?",
            (agent_id, guild_id, key),
        )
        return _from_row(row) if row else None

    async def put(self, tx: Connection, memory: Memory) -> int:
        """Store ``memory`` (its id is ignored); a row with its agent, server and key is replaced. Its id."""
        row = await tx.fetch_one(
            "INSERT INTO memories (agent_id, guild_id, key, content, created_by_user_id, session_key, run_id, "
            "created_at, auto_saved) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, guild_id, key) DO "
            "UPDATE SET content = excluded.content, created_by_user_id = excluded.created_by_user_id, "
            "session_key = excluded.session_key, run_id = excluded.run_id, created_at = excluded.created_at, "
            "auto_saved = excluded.auto_saved RETURNING id",
            (
                memory.agent_id,
                memory.guild_id,
                memory.key,
                memory.content,
                memory.created_by_user_id,
                memory.session_key,
                memory.run_id,
                memory.created_at,
                int(memory.auto_saved),
            ),
        )
        assert row is not None
        return int(row[0])

    async def oldest_auto_saved(self, tx: Connection, agent_id: str, guild_id: int) -> int | None:
        """The id of the agent's oldest auto-saved memory in the server, if any."""
        row = await tx.fetch_one(
            "SELECT id FROM memories WHERE agent_id = ? AND guild_id = ? AND auto_saved = 1 ORDER BY created_at, id "
            "LIMIT 1",
            (agent_id, guild_id),
        )
        return int(row[0]) if row else None

    async def search(self, guild_id: int, agent_ids: list[str], query: str, limit: int) -> list[Memory]:
        """The rows of ``agent_ids`` in ``guild_id`` sharing a stemmed word with ``query``.

        Best first."""
        words = query_words(query)
        if not words or not agent_ids:
            return []
        if self._db.postgresql:
            text = " | ".join("'" + word.replace("'", "") + "'" for word in words)
            sql = _POSTGRESQL_SEARCH
        else:
            text = " OR ".join(f'"{word}"' for word in words)
            sql = _SQLITE_SEARCH
        rows = await self._db.fetch_all(sql, (text, guild_id, json.dumps(agent_ids), limit))
        return [_from_row(row) for row in rows]

    async def get(self, memory_id: int) -> Memory | None:
        row = await self._db.fetch_one(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        return _from_row(row) if row else None

    async def listed(self, guild_id: int, created_by: int | None, limit: int) -> tuple[list[Memory], int]:
        """A server's newest ``limit`` rows, and how many there are in all.

        Only those ``created_by`` stored from their conversations, unless it is ``None``."""
        where, params = "guild_id = ?", [guild_id]
        if created_by is not None:
            where, params = where + " AND created_by_user_id = ?", [*params, created_by]
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM memories WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
            (*params, limit),
        )
        total = await self._db.fetch_one(f"SELECT COUNT(*) FROM memories WHERE {where}", params)
        assert total is not None
        return [_from_row(row) for row in rows], int(total[0])

    async def narrow(self, tx: Connection, session_key: str, agents: list[str]) -> None:
        """Record a sub-agent session's narrowed allowlist (in the transaction that creates the session)."""
        await tx.execute(
            "INSERT INTO memory_allowlists (session_key, agents) VALUES (?, ?)", (session_key, json.dumps(agents))
        )

    async def narrowed(self, session_key: str) -> list[str] | None:
        """A sub-agent session's narrowed allowlist; ``None``: it reads its parent's."""
        row = await self._db.fetch_one("SELECT agents FROM memory_allowlists WHERE session_key = ?", (session_key,))
        return None if row is None else list(json.loads(row[0]))

    async def delete(self, tx: Connection, memory_id: int) -> bool:
        return await tx.execute("DELETE FROM memories WHERE id = ?", (memory_id,)) == 1
