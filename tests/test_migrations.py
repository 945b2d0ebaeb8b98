"""Both dialects' migrations make the same schema: PostgreSQL's baseline stands for SQLite's 0001-0013, and every
later migration comes in both folders under one number."""

from __future__ import annotations

import asyncio

import pytest

from storage.db import Database, migrations
from tests import stores

BASELINE = 13


def test_every_migration_after_the_baseline_comes_in_both_dialects():
    sqlite = [version for version, _, _ in migrations("migrations/sqlite")]
    postgresql = [version for version, _, _ in migrations("migrations/postgresql")]
    assert sqlite[:BASELINE] == list(range(1, BASELINE + 1))
    assert postgresql[0] == BASELINE
    assert [v for v in sqlite if v > BASELINE] == [v for v in postgresql if v > BASELINE]


_SQLITE_COLUMNS = (
    "SELECT m.name, c.name FROM sqlite_master m JOIN pragma_table_info(m.name) c "
    "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'"
)
_SQLITE_INDEXES = "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex_%'"
_POSTGRESQL_COLUMNS = "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
# Primary keys and UNIQUE columns get indexes of their own, named by each database its own way.
_POSTGRESQL_INDEXES = (
    "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' "
    "AND indexname NOT LIKE '%\\_pkey' AND indexname NOT LIKE '%\\_key'"
)


# Full-text search is each dialect's own: SQLite's FTS5 table (and its shadow tables), PostgreSQL's generated
# tsvector column and its GIN index (storage/memories.py).
_SEARCH_TABLE = "memories_fts"
_SEARCH_COLUMN = ("memories", "search")
_SEARCH_INDEX = "memories_search"


async def _sets(url: str, columns: str, indexes: str) -> tuple[set[tuple[str, str]], set[str]]:
    db = await Database.open(url)
    try:
        found = {(row[0], row[1]) for row in await db.fetch_all(columns)}
        return {c for c in found if not c[0].startswith(_SEARCH_TABLE) and c != _SEARCH_COLUMN}, {
            row[0] for row in await db.fetch_all(indexes) if row[0] != _SEARCH_INDEX
        }
    finally:
        await db.close()


@pytest.mark.skipif(
    not stores.POSTGRESQL, reason="compares with PostgreSQL's schema: run with TB_TEST_STORE=postgresql"
)
async def test_both_dialects_make_the_same_tables_columns_and_indexes(tmp_path):
    sqlite = await _sets(str(tmp_path / "schema.sqlite3"), _SQLITE_COLUMNS, _SQLITE_INDEXES)
    postgresql = await _sets(stores.database(tmp_path / "schema"), _POSTGRESQL_COLUMNS, _POSTGRESQL_INDEXES)
    assert postgresql == sqlite


async def test_processes_starting_together_apply_each_migration_once(tmp_path):
    path = tmp_path / "together.sqlite3"
    url = stores.server().database(path, migrated=False) if stores.POSTGRESQL else str(path)
    databases = await asyncio.gather(*(Database.open(url) for _ in range(3)))  # each as a process would: its own
    try:
        versions = [row[0] for row in await databases[0].fetch_all("SELECT version FROM schema_migrations ORDER BY 1")]
    finally:
        for database in databases:
            await database.close()
    folder = "migrations/postgresql" if stores.POSTGRESQL else "migrations/sqlite"
    assert versions == [version for version, _, _ in migrations(folder)]
