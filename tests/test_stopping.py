"""The stop bound, in a process of its own: a process whose close does not end exits 1 once the bound has passed since
SIGTERM, and a second signal while it closes exits 1 at once; each says why in one log line, with no traceback.
(A stop that closes in time is tested against the real bot in ``test_wire_stop.py``.)"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time

import pytest

from bot.stopping import OVERRAN_EXIT_CODE, STOP_BOUND_SECONDS

pytestmark = pytest.mark.own_store("a process with no store: once is enough")

# A process that handles the stop signals as the bot does, and whose close never ends.
NEVER_CLOSES = """
import asyncio, sys
from bot.logging_setup import configure_logging
from bot.stopping import StopSignals

async def main():
    stop = StopSignals(bound=float(sys.argv[1]))
    stop.install()
    print("ready", flush=True)
    await stop.requested.wait()
    await asyncio.Event().wait()

configure_logging("INFO", "json")
asyncio.run(main())
"""


async def never_closing(bound: float) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", NEVER_CLOSES, str(bound), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    assert await asyncio.wait_for(process.stdout.readline(), 30) == b"ready\n"
    return process


async def outcome(process: asyncio.subprocess.Process) -> tuple[int, list[dict], str]:
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    text = stderr.decode()
    events = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert process.returncode is not None
    return process.returncode, events, text


def test_the_bound_sits_below_dockers_default_grace_of_ten_seconds():
    assert 0 < STOP_BOUND_SECONDS < 10


async def test_a_close_that_does_not_end_is_cut_at_the_bound_with_exit_1():
    process = await never_closing(bound=0.5)
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code, events, stderr = await outcome(process)

    assert code == OVERRAN_EXIT_CODE
    assert time.monotonic() - sent >= 0.5
    assert [e["event"] for e in events] == ["bot_stopping", "bot_stop_overran"]
    assert events[0]["signal"] == "SIGTERM" and events[0]["bound_seconds"] == 0.5
    assert events[1]["reason"] == "did not stop within 0.5s: stopped without closing; runs resume at the next start"
    assert "Traceback" not in stderr


async def test_a_second_signal_while_closing_exits_1_at_once():
    process = await never_closing(bound=60)
    process.send_signal(signal.SIGTERM)
    assert process.stderr is not None
    first = json.loads(await asyncio.wait_for(process.stderr.readline(), 30))
    assert first["event"] == "bot_stopping" and first["signal"] == "SIGTERM"
    process.send_signal(signal.SIGINT)
    code, events, stderr = await outcome(process)  # well before the 60 s bound (outcome waits 30 s at most)

    assert code == OVERRAN_EXIT_CODE
    assert [e["event"] for e in events] == ["bot_stop_overran"]
    assert events[0]["reason"] == "SIGINT while stopping: stopped without closing; runs resume at the next start"
    assert "Traceback" not in stderr
