"""Checkpoints of a SQLite store's WAL, in a thread of their own: no commit on the loop does one.

SQLite's own checkpoint runs inside the commit that passes 1,000 pages of WAL: on the loop's thread, it writes those
pages back into the database file and syncs it, which on a large store holds the loop far longer than any
statement. The store's connections turn it off (``wal_autocheckpoint = 0``). A task looks at the WAL every
``INTERVAL`` and, when it has changed, has a connection in a thread of its own checkpoint it PASSIVE, waiting for no
reader or writer. A WAL only starts over once all its frames are back in the database, and under a steady write load
a passive checkpoint never catches up with the frames written while it ran: when the WAL held more than ``PAGES``
frames, the task then takes the store's write lock (this process's transactions wait for it, asleep) while a
RESTART checkpoint writes back those few, so that the next commit starts the WAL over at the file's beginning and the
WAL stays bounded. The file keeps its size and is written over: neither ``journal_size_limit`` (it truncates the file
in the commit that starts it over, on the loop) nor a TRUNCATE checkpoint shrinks it, as the commits that grow it
again wait on the file system's journal while a checkpoint syncs. Several processes on one file may each run one:
checkpoints take turns, and a RESTART waits up to a second for another process's transaction, then does what a
PASSIVE one does.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import structlog

log = structlog.get_logger(__name__)
T = TypeVar("T")

INTERVAL = 0.2  # seconds between looks at the WAL: each checkpoint's sync has little to write
PAGES = 1000  # frames a WAL may hold before a RESTART catches up with the writers: SQLite's own threshold
_WAIT_MS = 1000  # how long a RESTART waits for another process's transaction; then it acts as a PASSIVE one


class Checkpointer:
    """Checkpoints the WAL of the SQLite file at ``path``, beside this process's writers.

    They hold ``writers`` to write; a RESTART holds it too."""

    def __init__(self, path: str, writers: asyncio.Lock) -> None:
        self.checkpoints = 0  # how many it ran, RESTARTs included
        self._path = path
        self._wal = Path(f"{path}-wal")
        self._writers = writers
        self._interval = INTERVAL
        self._pages = PAGES
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-checkpointer")
        self._connection: sqlite3.Connection | None = None
        self._seen: tuple[int, int] | None = None  # the WAL's (size, mtime) at the last look
        self._stopping = asyncio.Event()
        self._task = asyncio.create_task(self._watch(), name="sqlite-checkpointer")

    async def stop(self) -> None:
        """End the task, once a checkpoint under way is done."""
        self._stopping.set()
        await self._task

    async def close(self) -> None:
        """Close the connection and end the thread. Once the store's own connections are closed, this one is the
        last and checkpoints what is left, in its thread."""
        await self._in_thread(self._disconnect)
        self._thread.shutdown()  # the thread is idle: it ends at once

    async def _in_thread(self, call: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, call)

    async def _watch(self) -> None:
        while True:
            try:  # not wait_for, which on 3.11 can swallow a cancellation that comes as the event is set
                async with asyncio.timeout(self._interval):
                    await self._stopping.wait()
                return
            except TimeoutError:
                pass
            try:
                await self._step()
            except (sqlite3.Error, OSError) as error:  # the next look tries again
                log.warning("sqlite_checkpoint_failed", error=str(error))

    async def _step(self) -> None:
        if not self._changed():
            return
        frames = await self._in_thread(lambda: self._checkpoint("PASSIVE"))
        if frames > self._pages:  # writers may have kept it from catching up, and the WAL from starting over
            async with self._writers:
                await self._in_thread(lambda: self._checkpoint("RESTART"))

    def _changed(self) -> bool:
        try:
            stat = self._wal.stat()
        except FileNotFoundError:
            return False
        seen, self._seen = self._seen, (stat.st_size, stat.st_mtime_ns)
        return stat.st_size > 0 and seen != self._seen

    def _checkpoint(self, mode: str) -> int:
        """In the thread: a checkpoint; how many frames the WAL held when it began."""
        if self._connection is None:
            self._connection = sqlite3.connect(self._path, isolation_level=None)
            for pragma in (f"busy_timeout = {_WAIT_MS}", "synchronous = NORMAL"):
                self._connection.execute(f"PRAGMA {pragma}")
        _, frames, _ = self._connection.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        self.checkpoints += 1
        return int(frames)

    def _disconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
