"""A round of background Discord work that fails is logged, and the board keeps going (its database may be back)."""

from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from bot.discord_adapter.rounds import Rounds


async def test_a_failed_round_is_logged_and_the_next_wake_runs_another():
    calls: list[int] = []
    failed, done = asyncio.Event(), asyncio.Event()

    async def work() -> None:
        calls.append(len(calls))
        if len(calls) == 1:
            failed.set()
            raise ConnectionError("database went away")
        done.set()

    rounds = Rounds("test-board", work)
    with capture_logs() as logs:
        rounds.start()
        await asyncio.wait_for(failed.wait(), 5)
        rounds.wake()
        await asyncio.wait_for(done.wait(), 5)
        await rounds.close()
    assert calls == [0, 1]
    assert [(entry["event"], entry["rounds"]) for entry in logs] == [("round_failed", "test-board")]
