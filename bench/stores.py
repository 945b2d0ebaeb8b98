"""The stores a bench runs on: a fresh SQLite file in a temporary folder, or a fresh database on one throwaway
PostgreSQL server — the tests' own (``tests/stores.py``: started from the machine's binaries on loopback, without
fsync, each database a copy of a migrated template) — for every measurement, so none starts with another's rows."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.stores import PostgresServer, postgres_bindir

STORES = ("sqlite", "postgresql")


class BenchStores:
    def __init__(self, folder: Path, postgres: PostgresServer | None) -> None:
        self.folder = folder
        self._postgres = postgres

    def fresh(self, store: str, name: str) -> str:
        """What ``Database.open`` takes for a new, empty (or migrated) database called ``name`` on ``store``."""
        path = self.folder / f"{name}.sqlite3"
        if store == "sqlite":
            return str(path)
        assert self._postgres is not None, "bench_stores drops postgresql when it cannot start a server"
        return self._postgres.database(path)


@contextmanager
def bench_stores(wanted: Sequence[str]) -> Iterator[tuple[BenchStores, list[str]]]:
    """The stores, and which of ``wanted`` can run here (PostgreSQL needs ``initdb`` and ``pg_ctl``)."""
    unknown = set(wanted) - set(STORES)
    if unknown:
        raise SystemExit(f"unknown store {', '.join(sorted(unknown))}: choose from {', '.join(STORES)}")
    usable = list(wanted)
    bindir = postgres_bindir() if "postgresql" in wanted else None
    if "postgresql" in wanted and bindir is None:
        print("postgresql: skipped, no initdb/pg_ctl found (set TB_PG_BINDIR)")
        usable.remove("postgresql")
    postgres = PostgresServer(bindir) if bindir is not None else None
    try:
        if postgres is not None:
            postgres.start()
        with tempfile.TemporaryDirectory(prefix="tb-bench-") as folder:
            yield BenchStores(Path(folder), postgres), usable
    finally:
        if postgres is not None:
            with contextlib.suppress(subprocess.CalledProcessError):  # it failed to start: nothing to stop
                postgres.stop()
