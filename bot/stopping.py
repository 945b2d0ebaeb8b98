"""How a bot process stops: SIGTERM or SIGINT close it cleanly within a bound, else it exits anyway.

``docker stop``, ``systemctl stop`` and Ctrl-C ask the process to stop. The first SIGTERM or SIGINT starts the bot's
close (its runs stop here and stay in the journal for the next start or another process, its heartbeat ends, the
announcements it was posting are released) and arms a watchdog: a process not gone ``STOP_BOUND_SECONDS`` after the
signal — a part that does not close, a thread that does not end — exits 1 there and then, and its runs resume at the
next start as after a crash. A second signal exits 1 at once. The bound sits below Docker's default grace (10 s)
and the systemd unit's ``TimeoutStopSec``, so neither has to SIGKILL the process.

The watchdog is a thread, not an event-loop timer: it fires even if the loop is blocked or already closed (the
interpreter waiting for a thread at exit).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time

import structlog

log = structlog.get_logger(__name__)

STOP_BOUND_SECONDS = 8.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
OVERRAN_EXIT_CODE = 1


class StopSignals:
    """The stop signals, handled on the running loop: ``requested`` is set at the first one."""

    def __init__(self, bound: float = STOP_BOUND_SECONDS) -> None:
        self.bound = bound
        self.requested = asyncio.Event()
        self._received_at: float | None = None

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, self._received, signum)

    def _received(self, signum: signal.Signals) -> None:
        name = signal.Signals(signum).name
        if self._received_at is not None:
            _exit_now(f"{name} while stopping: stopped without closing; runs resume at the next start")
        self._received_at = time.monotonic()
        log.info("bot_stopping", signal=name, bound_seconds=self.bound)
        self.requested.set()
        threading.Thread(target=self._watch, name="stop-watchdog", daemon=True).start()

    def _watch(self) -> None:
        time.sleep(self.bound)
        _exit_now(f"did not stop within {self.bound:g}s: stopped without closing; runs resume at the next start")

    def stopped(self) -> None:
        """Say that the bot closed, and how long it took since the signal.

        Nothing if none came."""
        if self._received_at is not None:
            log.info("bot_stopped", seconds=round(time.monotonic() - self._received_at, 3))


def _exit_now(reason: str) -> None:
    """Leave the process at once, saying why in one line.

    No cleanup may hang it."""
    log.error("bot_stop_overran", reason=reason)
    sys.stderr.flush()
    os._exit(OVERRAN_EXIT_CODE)
