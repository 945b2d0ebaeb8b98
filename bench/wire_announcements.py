"""Announcements over the wire: how long after its run ends does its announcement reach Discord?

Run by hand from the repository's root: ``.venv/bin/python -m bench.wire_announcements [--spawns 200]
[--channels 10] [--latency 0.5]``. The real bot — ``python -m bot`` in a process of its own, as it is deployed —
against the tests' fake Discord (``tests/fakes/discord_server.py``) and the fake OpenAI server answering after
``--latency``, both in this process, takes ``--spawns`` ``/subagents spawn`` commands spread over ``--channels``
channels, all sent at once, with durable runs (the default; SQLite). For each run: its announcement's arrival at the
fake Discord (the message's timestamp) minus the run's end (``runs.ended_at``, the bot's clock: the same machine's).
Goal: p99 ≤ 0.5 s.

The bot has its own process, as in production, where Discord and the model provider are elsewhere: sharing one loop
with the fakes (as the tests do), the bench would count the fakes' work as the bot's delay too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from pathlib import Path

import pytest

from bench.table import TARGETS, verdict
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI, Step
from tests.harness import API_KEY, BOT_TOKEN, World, announcement_for, furnish, spawned_run_id

Row = tuple[object, ...]
CONFIG = "[agents.defaults.subagents]\nmax_concurrent = 64\nmax_queued = 10000\n[budgets]\nmember_concurrent_runs = 0\n"
# seconds between looks for the announcements: each look scans every channel for every run (arrivals are the fake's
# message timestamps, so how often it looks changes none of them)
_LOOK_EVERY = 1.0
_GIVE_UP = 600  # seconds for every announcement to arrive
_CLOSE = 60  # seconds the bot has to stop after SIGINT


async def spawned(world: World, channel: object, task: str) -> str:
    interaction = await world.discord.slash(world.alice, channel, "subagents spawn", agent="researcher", task=task)
    await world.discord.wait_ack(interaction, timeout=120)
    reply = await world.discord.wait_followup(interaction, timeout=120)
    return spawned_run_id(reply)


@contextlib.asynccontextmanager
async def bot_process(world: World) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -m bot`` on the world's config, its log in the world's folder; stopped (SIGINT) on the way out."""
    config = world.write_config()
    env = {**os.environ, "TB_TEST_TOKEN": BOT_TOKEN, "TB_TEST_API_KEY": API_KEY}
    with (world.tmp_path / "bot.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "--config", str(config), env=env, stdout=log, stderr=log
        )
    try:
        await world.discord.wait_for_sessions(1, timeout=60)
        await world.discord.wait_for_request("PUT", r"/applications/\d+/guilds/\d+/commands$", timeout=60)
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(process.wait(), _CLOSE)
            except TimeoutError:
                process.kill()
                await process.wait()


def arrivals(discord: FakeDiscord, where: dict[str, object]) -> dict[str, float]:
    """Run id → when its announcement reached the fake Discord, for those that did."""
    found = {}
    for run_id, room in where.items():
        hit = next(filter(announcement_for(run_id), discord.channel_messages(room)), None)
        if hit is not None:
            found[run_id] = datetime.fromisoformat(hit["timestamp"]).timestamp()
    return found


async def announced(world: World, rooms: Sequence[object], spawns: int) -> dict[str, float]:
    """Spawn ``spawns`` runs at once across ``rooms``; run id (short, as Discord shows it) → its announcement's
    delay after its run's end."""
    run_ids = await asyncio.gather(*(spawned(world, rooms[i % len(rooms)], f"task {i}") for i in range(spawns)))
    where = {run_id: rooms[i % len(rooms)] for i, run_id in enumerate(run_ids)}
    give_up = asyncio.get_running_loop().time() + _GIVE_UP
    while len(found := arrivals(world.discord, where)) < spawns:
        if asyncio.get_running_loop().time() > give_up:
            raise TimeoutError(f"{spawns - len(found)} of {spawns} announcements never arrived")
        await asyncio.sleep(_LOOK_EVERY)
    ended = {run_id[: len(run_ids[0])]: at for run_id, at in world.rows("SELECT id, ended_at FROM runs")}
    return {run_id: found[run_id] - ended[run_id] for run_id in run_ids}


async def measure(spawns: int, channels: int, latency: float) -> list[Row]:
    monkeypatch = pytest.MonkeyPatch()
    try:
        async with FakeDiscord(bot_token=BOT_TOKEN) as discord, FakeOpenAI() as llm:
            with tempfile.TemporaryDirectory(prefix="tb-bench-") as folder:
                world = World(discord, llm, Path(folder), monkeypatch, extra_config=CONFIG, status_messages=False)
                world.discord_extra = "max_active_runs_per_member = 0"
                rooms = furnish(world, "Bench Guild", tuple(f"room-{i}" for i in range(channels)))
                llm.default = lambda body: Step.reply("done", delay=latency)
                async with bot_process(world):
                    delays = sorted((await announced(world, rooms, spawns)).values())
    finally:
        monkeypatch.undo()
    p50, p99 = statistics.median(delays), statistics.quantiles(delays, n=100, method="inclusive")[98]
    return [
        ("sqlite", f"wire: {spawns} spawns, p50", f"{p50:.3f} s", "", "", ""),
        ("sqlite", f"wire: {spawns} spawns, p99", f"{p99:.3f} s", "≤ 0.5 s after run end", "", verdict(p99 <= 0.5)),
    ]


async def main(args: argparse.Namespace) -> None:
    print(TARGETS.header())
    for row in await measure(args.spawns, args.channels, args.latency):
        print(TARGETS.row(*row))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.wire_announcements", description=__doc__.split("\n")[0])
    parser.add_argument("--spawns", type=int, default=200)
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the fake model takes to answer")
    asyncio.run(main(parser.parse_args()))
