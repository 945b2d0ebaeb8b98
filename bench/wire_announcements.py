"""Announcements over the wire (issue 14): how long after its run ends does its announcement reach Discord?

Run by hand from the repository's root: ``.venv/bin/python -m bench.wire_announcements [--spawns 200]
[--channels 10] [--latency 0.5]``. The real bot — discord.py against the tests' fake Discord
(``tests/fakes/discord_server.py``), the real agent runtime against the fake OpenAI server answering after
``--latency`` — takes ``--spawns`` ``/subagents spawn`` commands spread over ``--channels`` channels, all sent at
once, with durable runs (the default; SQLite). For each run: its announcement's arrival at the fake Discord (the
message's timestamp) minus the run's end (``runs.ended_at``). Goal: p99 ≤ 0.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from datetime import datetime
from pathlib import Path

import pytest

from bench.table import TARGETS, verdict
from bot.logging_setup import configure_logging
from tests.conftest import API_KEY, BOT_TOKEN, World, announcement_for, spawned_run_id
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI, Step

Row = tuple[object, ...]
CONFIG = "[agents.defaults.subagents]\nmax_concurrent = 64\nmax_queued = 10000\n"
# seconds between looks for the announcements: each look scans every channel for every run, on the bot's loop (a
# look every 10 ms, as tests poll, took a third of the loop and delayed the deliveries it was timing)
_LOOK_EVERY = 1.0


async def spawned(world: World, channel: object, task: str) -> str:
    interaction = await world.discord.slash(world.alice, channel, "subagents spawn", agent="researcher", task=task)
    await world.discord.wait_ack(interaction)
    reply = await world.discord.wait_followup(interaction, timeout=120)
    return spawned_run_id(reply)


async def measure(spawns: int, channels: int, latency: float) -> list[Row]:
    monkeypatch = pytest.MonkeyPatch()
    discord, llm = FakeDiscord(bot_token=BOT_TOKEN), FakeOpenAI()
    await discord.start()
    await llm.start()
    try:
        with tempfile.TemporaryDirectory(prefix="tb-bench-") as folder:
            monkeypatch.setenv("TB_TEST_TOKEN", BOT_TOKEN)
            monkeypatch.setenv("TB_TEST_API_KEY", API_KEY)
            world = World(discord, llm, Path(folder), monkeypatch, extra_config=CONFIG, status_messages=False)
            world.discord_extra = "max_active_runs_per_member = 0"
            world.guild = discord.add_guild("Bench Guild")
            rooms = [discord.add_text_channel(world.guild, f"room-{i}") for i in range(channels)]
            world.channel = rooms[0]
            world.alice = discord.add_user("alice")
            discord.add_member(world.guild, world.alice)
            llm.default = lambda body: Step.reply("done", delay=latency)
            bot = await world.start_bot()
            run_ids = await asyncio.gather(*(spawned(world, rooms[i % channels], f"task {i}") for i in range(spawns)))
            where = {run_id: rooms[i % channels] for i, run_id in enumerate(run_ids)}

            def arrivals() -> dict[str, float]:
                found = {}
                for run_id, room in where.items():
                    hit = next(filter(announcement_for(run_id), discord.channel_messages(room)), None)
                    if hit is not None:
                        found[run_id] = datetime.fromisoformat(hit["timestamp"]).timestamp()
                return found

            give_up = asyncio.get_running_loop().time() + 600
            while len(arrivals()) < spawns:  # arrivals are the fake's timestamps: a slow look changes none of them
                if asyncio.get_running_loop().time() > give_up:
                    raise TimeoutError(f"{spawns - len(arrivals())} of {spawns} announcements never arrived")
                await asyncio.sleep(_LOOK_EVERY)
            ended = {run_id[: len(run_ids[0])]: at for run_id, at in world.rows("SELECT id, ended_at FROM runs")}
            delays = sorted(arrivals()[run_id] - ended[run_id] for run_id in run_ids)  # short ids, as Discord shows
            await world.stop_bot(bot)
    finally:
        monkeypatch.undo()
        await llm.stop()
        await discord.stop()
    p50, p99 = statistics.median(delays), statistics.quantiles(delays, n=100, method="inclusive")[98]
    return [
        ("sqlite", f"wire: {spawns} spawns, p50", f"{p50:.3f} s", "", "", ""),
        ("sqlite", f"wire: {spawns} spawns, p99", f"{p99:.3f} s", "≤ 0.5 s after run end", "", verdict(p99 <= 0.5)),
    ]


async def main(args: argparse.Namespace) -> None:
    configure_logging("warning", "console", ())  # the bot logs at info; here only what goes wrong
    print(TARGETS.header())
    for row in await measure(args.spawns, args.channels, args.latency):
        print(TARGETS.row(*row))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.wire_announcements", description=__doc__.split("\n")[0])
    parser.add_argument("--spawns", type=int, default=200)
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the fake model takes to answer")
    asyncio.run(main(parser.parse_args()))
