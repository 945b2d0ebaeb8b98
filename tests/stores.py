"""The store tests run against: SQLite files (the default), or PostgreSQL with ``TB_TEST_STORE=postgresql``.

For PostgreSQL, one throwaway server is started from the machine's binaries (``initdb``, ``pg_ctl``; found on
``PATH``, under ``/usr/lib/postgresql/*/bin``, or in ``TB_PG_BINDIR``) in a temporary folder, listening on
127.0.0.1 only, without fsync, and stopped when the session ends. A test's database is named after the SQLite file
it would have used, so reopening the same path is a restart, as with SQLite; each is a copy of a template that
holds the migrated schema.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import psycopg

from bot.core.durable import journal_store
from bot.core.durable.executors import runs_here
from storage.db import Database
from storage.postgres import translate

POSTGRESQL = os.environ.get("TB_TEST_STORE", "sqlite") == "postgresql"
INTEGRITY_ERRORS = (sqlite3.IntegrityError, psycopg.IntegrityError)
_TEMPLATE = "tb_template"
_OWNER = "owner.pid"


def postgres_bindir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are, if anywhere."""
    candidates = [os.environ.get("TB_PG_BINDIR"), os.path.dirname(shutil.which("pg_ctl") or "")]
    candidates += sorted((str(path) for path in Path("/usr/lib/postgresql").glob("*/bin")), reverse=True)
    for candidate in filter(None, candidates):
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PostgresServer:
    """A PostgreSQL cluster in a temporary folder. initdb refuses to run as root; then it runs as ``postgres``."""

    def __init__(self, bindir: Path) -> None:
        self._bindir = bindir
        self._root = Path(tempfile.mkdtemp(prefix="tb-pg-"))
        (self._root / _OWNER).write_text(str(os.getpid()))
        self._port = _free_port()
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self._known: set[str] = set()

    def url(self, database: str) -> str:
        return f"postgresql://tb@127.0.0.1:{self._port}/{database}"

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self._as, str(self._bindir / tool), *args], check=True, capture_output=True, text=True)

    def start(self) -> None:
        if self._as:
            shutil.chown(self._root, "postgres")
        data = self._root / "data"
        self._run("initdb", "-D", str(data), "-U", "tb", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-k {self._root} -h 127.0.0.1 -p {self._port} -c fsync=off -c synchronous_commit=off"
        options += " -c full_page_writes=off -c max_connections=300"
        self._run("pg_ctl", "-D", str(data), "-l", str(self._root / "log"), "-w", "-o", options, "start")
        self._admin(f"CREATE DATABASE {_TEMPLATE}")
        asyncio.run(_migrate(self.url(_TEMPLATE)))

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self._root / "data"), "-m", "immediate", "stop")
        shutil.rmtree(self._root, ignore_errors=True)

    def reap_orphans(self) -> None:
        """Stop and delete the servers of test sessions that died without stopping theirs (a killed pytest)."""
        for root in Path(tempfile.gettempdir()).glob("tb-pg-*"):
            owner = root / _OWNER
            if root == self._root or not owner.exists() or runs_here(int(owner.read_text())):
                continue
            if (root / "data" / "postmaster.pid").exists():
                subprocess.run(
                    [*self._as, str(self._bindir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "stop"],
                    capture_output=True,
                )
            shutil.rmtree(root, ignore_errors=True)

    def _admin(self, sql: str) -> None:
        with psycopg.connect(self.url("postgres"), autocommit=True) as connection:
            connection.execute(sql)

    def database(self, path: Path, *, migrated: bool = True) -> str:
        """The database standing for the SQLite file ``path``, created on first use: migrated, or empty."""
        name = "t_" + hashlib.sha1(str(path).encode()).hexdigest()[:20]
        if name not in self._known:
            self._admin(f"CREATE DATABASE {name} TEMPLATE {_TEMPLATE if migrated else 'template0'}")
            self._known.add(name)
        return self.url(name)


async def _migrate(url: str) -> None:
    """The store's schema and DBOS's (its ``dbos`` schema): a test's copy then starts with both, as a restart does."""
    database = await Database.open(url)
    await database.close()
    await journal_store.migrate(url)


_server: PostgresServer | None = None


def server() -> PostgresServer:
    global _server
    if _server is None:
        bindir = postgres_bindir()
        assert bindir is not None, "conftest skips every test when there is none"
        _server = PostgresServer(bindir)
        _server.reap_orphans()
        _server.start()
    return _server


def stop_server() -> None:
    if _server is not None:
        _server.stop()


def database(path: Path) -> str:
    """What ``Database.open`` and ``[storage] url`` take for the database a test keeps at ``path``."""
    return server().database(path) if POSTGRESQL else str(path)


def storage_line(path: Path) -> str:
    """The ``[storage]`` line of a config for the database a test keeps at ``path``."""
    return f'{"url" if POSTGRESQL else "path"} = "{database(path)}"'


async def foreign_key_violations(db: Database) -> list[Any]:
    """Rows whose foreign keys point nowhere. SQLite counts them (a rebuilt table, a deferred check, can leave
    some); PostgreSQL refuses the statement that would leave one, so there are none to count."""
    return [] if POSTGRESQL else list(await db.fetch_all("PRAGMA foreign_key_check"))


async def cut_listeners(db: Database) -> None:
    """End the PostgreSQL connections waiting on LISTEN, as a lost connection would."""
    await db.fetch_all(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()"
    )


def query(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement (committed at once) on the database a test keeps at ``path``; the rows it returns."""
    if POSTGRESQL:
        with psycopg.connect(server().database(path), autocommit=True) as postgres:
            cursor = postgres.execute(translate(sql), params)
            return cursor.fetchall() if cursor.description else []
    sqlite = sqlite3.connect(path, isolation_level=None)
    try:
        return sqlite.execute(sql, params).fetchall()
    finally:
        sqlite.close()
