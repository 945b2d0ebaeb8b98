"""Answers that stream, over the wire: edits per second per message, and the final text's delay.

Run by hand from the repository's root: ``.venv/bin/python -m bench.streaming [--streams 20] [--channels 10]
[--words 120] [--word-seconds 0.1]``. The real bot (``python -m bot``, a process of its own) against the tests' fake
Discord, which answers 429 past Discord's per-channel edit bucket (5 edits in 5 s), and the fake OpenAI server,
which streams each answer a word every ``--word-seconds``. ``--streams`` members mention the bot at once across
``--channels`` channels, so that many answers are written at the same time. For each answer's message: its edits
per second while its model wrote (edits up to the last token, over the time from its first post to the last
token), and the final text's delay (the edit that wrote it, minus the model's last token; the same machine's
monotonic clock). Goals: ≤ 1 edit/s per message; final text ≤ 1.5 s after the last token at p99. The baseline, in
the same run: the same answers with streaming off (posted whole once done), whose final text's delay the streamed
one's is compared with.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from pathlib import Path

import pytest

from bench.table import TARGETS, verdict
from bench.wire_announcements import bot_process
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI, Step
from tests.harness import BOT_TOKEN, World, furnish
from tests.polling import eventually

Row = tuple[object, ...]
CONFIG = "[agents.defaults.subagents]\nmax_concurrent = 64\n[budgets]\nmember_concurrent_runs = 0\n"


def answer(body: dict, words: int, word_seconds: float) -> Step:
    """The answer to mention ``qN``: ``words`` words naming it, a word at a time."""
    asked = next(text for text in reversed([m.get("content") for m in body["messages"]]) if isinstance(text, str))
    tag = asked.split()[-1]
    return Step.reply(" ".join(f"{tag}w{n}" for n in range(words)), chunk_delay=word_seconds)


async def measure(streams: int, channels: int, words: int, word_seconds: float) -> list[Row]:
    """The streamed answers' rows, then the same answers posted whole, as the baseline."""
    streamed = await _one_pass(streams, channels, words, word_seconds, streaming=True)
    whole = await _one_pass(streams, channels, words, word_seconds, streaming=False)
    rates, delays, refused = streamed
    p99 = _p99(delays)
    whole_p99 = _p99(whole[1])
    worst = max(rates)
    return [
        ("sqlite", f"stream: {streams} at once, edits/s, median", f"{statistics.median(rates):.2f}/s", "", "", ""),
        (
            "sqlite",
            f"stream: {streams} at once, edits/s, most",
            f"{worst:.2f}/s",
            "≤ 1 edit/s a message",
            "",
            verdict(worst <= 1.0),
        ),
        ("sqlite", "stream: final text after last token, p50", f"{statistics.median(delays):.3f} s", "", "", ""),
        ("sqlite", "stream: final text after last token, p99", f"{p99:.3f} s", "≤ 1.5 s", "", verdict(p99 <= 1.5)),
        (
            "sqlite",
            "posted whole: final text after last token, p99",
            f"{whole_p99:.3f} s",
            "(baseline)",
            f"{p99 / whole_p99:.2f}×",
            "",
        ),
        ("sqlite", "stream: edits Discord refused (429)", f"{refused}", "", "", ""),
    ]


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


async def _one_pass(
    streams: int, channels: int, words: int, word_seconds: float, *, streaming: bool
) -> tuple[list[float], list[float], int]:
    """Each answer's edits per second and final text's delay; the edits Discord refused."""
    monkeypatch = pytest.MonkeyPatch()
    try:
        async with FakeDiscord(bot_token=BOT_TOKEN) as discord, FakeOpenAI() as llm:
            discord.edit_rate_limit = (5, 5.0)
            with tempfile.TemporaryDirectory(prefix="tb-bench-") as folder:
                world = World(discord, llm, Path(folder), monkeypatch, extra_config=CONFIG, status_messages=False)
                world.stream_answers = streaming
                world.discord_extra = "max_active_runs_per_member = 0"
                rooms = furnish(world, "Bench Guild", tuple(f"room-{i}" for i in range(channels)))
                llm.default = lambda body: answer(body, words, word_seconds)
                async with bot_process(world):
                    return await _written(world, rooms, streams, words)
    finally:
        monkeypatch.undo()


async def _written(world: World, rooms: list, streams: int, words: int) -> tuple[list[float], list[float], int]:
    at = f"<@{world.discord.bot_user_id}>"
    asked = await asyncio.gather(
        *(world.discord.send_user_message(world.alice, rooms[i % len(rooms)], f"{at} q{i}") for i in range(streams))
    )
    finals = {f"q{i}": " ".join(f"q{i}w{n}" for n in range(words)) for i in range(streams)}

    def answered() -> dict[str, dict] | None:
        found = {}
        for i, question in enumerate(asked):
            room = rooms[i % len(rooms)]
            reply = next(
                (
                    m
                    for m in world.discord.channel_messages(room)
                    if (m.get("message_reference") or {}).get("message_id") == question["id"]
                ),
                None,
            )
            if reply is None or reply["content"] != finals[f"q{i}"]:
                return None
            found[f"q{i}"] = reply
        return found

    replies = await eventually(answered, timeout=600, describe="every answer's final text")
    assert replies is not None
    last_token = {}
    for request in world.llm.requests:
        texts = [m.get("content") for m in request["messages"] if isinstance(m.get("content"), str)]
        last_token[texts[-1].split()[-1]] = request["last_token_at"]
    rates, delays = [], []
    for tag, reply in replies.items():
        meta = world.discord.message_meta(reply)
        done = last_token[tag]
        while_written = [t for t in meta.edited_at if t <= done]
        rates.append(len(while_written) / max(done - meta.created_at, 1e-9))
        delays.append((meta.edited_at[-1] if meta.edited_at else meta.created_at) - done)
    return rates, delays, world.discord.edits_rate_limited


async def main(args: argparse.Namespace) -> None:
    print(TARGETS.header())
    for row in await measure(args.streams, args.channels, args.words, args.word_seconds):
        print(TARGETS.row(*row))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.streaming", description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--words", type=int, default=120, help="words in each answer")
    parser.add_argument("--word-seconds", type=float, default=0.1, help="seconds between two words of an answer")
    asyncio.run(main(parser.parse_args()))
