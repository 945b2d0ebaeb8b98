"""Several processes share one outbox: each announcement is posted by exactly one of them, rows of a channel keep
their order, and a process that dies mid-delivery leaves its row to another once its claim's lease has run out.

Each "process" here is what a bot process delivers with: its own database connections and its own discord.py
client (logged in over REST to the fake Discord), running the real delivery worker. The fake's nonce window is
closed, so a second post of the same part shows up as a second message instead of being folded by the nonce.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import discord
import pytest
from structlog.testing import capture_logs

from bot.core.runs.announcements import Announcement
from bot.discord_adapter.delivery import MAX_CHANNELS, DeliveryWorker
from bot.discord_adapter.render import render
from bot.records import RunStatus
from storage.db import Database
from storage.outbox import OutboxRepository, OutboxRow
from tests import stores
from tests.harness import BOT_TOKEN
from tests.polling import eventually, stays

LEASE = 1.0


@dataclass
class Process:
    name: str
    db: Database
    client: discord.Client
    worker: DeliveryWorker


def announcement(label: str, body: str) -> Announcement:
    return Announcement(
        kind="reply",
        status=RunStatus.COMPLETED,
        status_line="completed successfully",
        body=body,
        agent_label="researcher",
        run_id=f"run-{label}",
        session_key=f"agent:researcher:subagent:{label}",
    )


LONG = announcement("long", "\n".join(f"paragraph {n}: " + "word " * 150 for n in range(6)))  # 3 parts


@contextlib.asynccontextmanager
async def process(fake_discord, url: str, name: str, lease: float = LEASE) -> AsyncIterator[Process]:
    """A delivery worker as one bot process runs it, with ``name`` as its executor id."""
    discord.http.Route.BASE = fake_discord.api_base_url
    db = await Database.open(url)
    client = discord.Client(intents=discord.Intents.none())
    await client.login(BOT_TOKEN)

    async def delivered(run_id: str) -> None:
        """Nothing to tell a core here."""

    worker = DeliveryWorker(
        client,
        db,
        OutboxRepository(db),
        on_delivered=delivered,
        give_up_after=3600,
        executor_id=name,
        lease=lease,
        base_delay=0.05,
    )
    try:
        yield Process(name, db, client, worker)
    finally:
        await worker.close()
        await client.close()
        await db.close()


async def enqueue(url: str, rows: list[tuple[int, Announcement]]) -> None:
    db = await Database.open(url)
    try:
        async with db.transaction() as tx:
            for channel_id, item in rows:
                await OutboxRepository(db).enqueue(
                    tx,
                    key=f"announce:{item.run_id}",
                    run_id=None,
                    channel_id=channel_id,
                    payload_json=item.model_dump_json(),
                    now=time.time(),
                )
    finally:
        await db.close()


@pytest.fixture
def guild(fake_discord):
    fake_discord.nonce_window = 0.0  # a duplicate post must show, not be folded into the first by its nonce
    return fake_discord.add_guild("Shared Guild")


def shared(tmp_path, sql: str) -> list[tuple]:
    """Rows of ``sql`` on the database both processes use."""
    return stores.query(tmp_path / "shared.sqlite3", sql)


def contents(fake_discord, channel) -> list[str]:
    return [message["content"] for message in fake_discord.channel_messages(channel)]


async def test_two_processes_post_each_announcement_once_in_channel_order(fake_discord, guild, tmp_path):
    url = stores.database(tmp_path / "shared.sqlite3")
    channels = [fake_discord.add_text_channel(guild, f"c{index}") for index in range(2 * MAX_CHANNELS)]
    rows = [(channel.id, announcement(f"{channel.name}-{n}", f"{channel.name} answer {n}")) for n in range(4)
            for channel in channels]  # fmt: skip
    await enqueue(url, rows)
    # A channel's first post waits out a 429, so whoever claims it holds it a while the other process looks for
    # rows; and a worker delivers MAX_CHANNELS channels at once: neither process can take them all.
    for channel in channels:
        fake_discord.inject_failure("POST", rf"^/channels/{channel.id}/messages$", 429, retry_after=1.0)

    async with process(fake_discord, url, "a") as a, process(fake_discord, url, "b") as b:
        await asyncio.gather(a.worker.start(), b.worker.start())
        await eventually(
            lambda: shared(tmp_path, "SELECT COUNT(*) FROM outbox WHERE status = 'pending'") == [(0,)],
            timeout=20,
            describe="every row delivered",
        )

    for channel in channels:
        assert contents(fake_discord, channel) == [f"{channel.name} answer {n}" for n in range(4)]
    posts = fake_discord.requests_matching("POST", r"^/channels/\d+/messages$")
    assert len(posts) == len(rows) + len(channels)  # each row once, and each channel's first post once more
    delivered_by = shared(tmp_path, "SELECT DISTINCT claimed_by FROM outbox")
    assert sorted(delivered_by) == [("a",), ("b",)]  # both processes delivered: they did compete
    released = "SELECT COUNT(*) FROM outbox WHERE claim_until IS NOT NULL"
    assert shared(tmp_path, released) == [(0,)]


async def test_a_process_killed_mid_delivery_leaves_its_row_to_another_after_the_lease_once(
    fake_discord, guild, tmp_path
):
    url = stores.database(tmp_path / "shared.sqlite3")
    channel = fake_discord.add_text_channel(guild, "long")
    parts = [message.content for message in render(LONG)]
    assert len(parts) == 3
    # Discord creates the first part but its answer is a 429 asking to wait a minute: A sits in discord.py's wait
    fake_discord.inject_failure("POST", rf"^/channels/{channel.id}/messages$", 429, after_commit=True, retry_after=60)
    row = "SELECT status, claimed_by, parts_sent, claim_until FROM outbox"

    async with process(fake_discord, url, "a") as a, process(fake_discord, url, "b") as b:
        await enqueue(url, [(channel.id, LONG)])  # a fresh row for both processes: neither reads back for it as such
        await a.worker.start()
        await eventually(lambda: contents(fake_discord, channel) == parts[:1], timeout=10, describe="part 1 posted")
        await b.worker.start()
        await stays(  # A is alive and renews its claim: B must leave the row alone
            lambda: contents(fake_discord, channel) == parts[:1], for_seconds=3 * LEASE, describe="no part but A's"
        )
        [(status, claimed_by, parts_sent, held_until)] = shared(tmp_path, row)
        assert (status, claimed_by, parts_sent) == ("pending", "a", 0)
        assert held_until > time.time()
        assert contents(fake_discord, channel) == parts[:1]

        await a.worker.stop()  # A dies: its claim is not released, it runs out
        killed_at = time.time()
        [(_, _, _, claim_until)] = shared(tmp_path, row)
        await eventually(
            lambda: shared(tmp_path, row)[0][:2] == ("delivered", "b"),
            timeout=10,
            describe="B to deliver the row",
        )
        [(delivered_at,)] = shared(tmp_path, "SELECT delivered_at FROM outbox")

    assert claim_until <= killed_at + LEASE
    assert delivered_at >= claim_until  # B took it over only once A's lease had run out
    assert contents(fake_discord, channel) == parts  # part 1 read back, not posted again; the rest once
    [(parts_sent, message_ids)] = shared(tmp_path, "SELECT parts_sent, message_ids_json FROM outbox")
    assert parts_sent == 3
    assert json.loads(message_ids) == [int(message["id"]) for message in fake_discord.channel_messages(channel)]


async def test_processes_claiming_a_channel_at_once_one_takes_its_head_and_another_only_after_the_lease(tmp_path):
    url = stores.database(tmp_path / "shared.sqlite3")
    channel_id = 42
    await enqueue(url, [(channel_id, announcement(f"r{n}", f"answer {n}")) for n in range(2)])
    databases = await asyncio.gather(*(Database.open(url) for _ in range(4)))
    try:

        async def claims(prefix: str, now: float) -> list[tuple[str, OutboxRow]]:
            taken = await asyncio.gather(
                *(
                    OutboxRepository(db).claim_head(channel_id, f"{prefix}{i}", now, now + 60)
                    for i, db in enumerate(databases)
                )
            )
            return [(f"{prefix}{i}", row) for i, row in enumerate(taken) if row is not None]

        now = time.time()
        [(holder, first)] = await claims("p", now)
        assert first.id == 1 and first.claimed_by is None  # the head, and nobody had held it
        assert await claims("q", now + 59) == []  # the head is held, and the row behind it waits for it
        [(_, again)] = await claims("r", now + 61)  # the lease ran out: one process takes the row over
        assert again.id == 1 and again.claimed_by == holder
    finally:
        for db in databases:
            await db.close()


async def test_a_process_whose_lapsed_claim_was_taken_over_posts_nothing_more(fake_discord, guild, tmp_path):
    url = stores.database(tmp_path / "shared.sqlite3")
    channel = fake_discord.add_text_channel(guild, "long")
    parts = [message.content for message in render(LONG)]
    # the first part is created, and A waits 2 s in discord.py before sending it again (a stall, as far as the
    # other processes can tell)
    fake_discord.inject_failure("POST", rf"^/channels/{channel.id}/messages$", 429, after_commit=True, retry_after=2)
    with capture_logs() as logs:
        async with process(fake_discord, url, "a") as a:
            await enqueue(url, [(channel.id, LONG)])
            await a.worker.start()
            await eventually(lambda: contents(fake_discord, channel) == parts[:1], timeout=10, describe="part 1")
            # meanwhile A's lease ran out and B took the row over (B's own delivery is not the point here)
            shared(tmp_path, f"UPDATE outbox SET claimed_by = 'b', claim_until = {time.time() + 60}")
            await eventually(
                lambda: any(line["event"] == "delivery_claim_lost" for line in logs),
                timeout=10,
                describe="A to find its claim gone",
            )
            await stays(  # past the 2 s A was waiting to send part 1 again
                lambda: len(fake_discord.requests_matching("POST", rf"^/channels/{channel.id}/messages$")) == 1,
                for_seconds=3,
                describe="A sending nothing more",
            )

    assert contents(fake_discord, channel) == parts[:1]  # A sent neither part 1 again nor the next parts
    assert len(fake_discord.requests_matching("POST", rf"^/channels/{channel.id}/messages$")) == 1
    assert shared(tmp_path, "SELECT status, claimed_by, parts_sent FROM outbox") == [("pending", "b", 0)]


async def test_a_process_restarted_under_its_executor_id_takes_its_row_back_at_once(fake_discord, guild, tmp_path):
    url = stores.database(tmp_path / "shared.sqlite3")
    channel = fake_discord.add_text_channel(guild, "long")
    parts = [message.content for message in render(LONG)]
    fake_discord.inject_failure("POST", rf"^/channels/{channel.id}/messages$", 429, after_commit=True, retry_after=60)
    await enqueue(url, [(channel.id, LONG)])
    async with process(fake_discord, url, "a", lease=3600) as a:
        await a.worker.start()
        await eventually(lambda: contents(fake_discord, channel) == parts[:1], timeout=10, describe="part 1")
    assert shared(tmp_path, "SELECT status, claimed_by FROM outbox") == [("pending", "a")]  # it died holding it

    async with process(fake_discord, url, "a", lease=3600) as again:
        await again.worker.start()  # its claim was its own previous life's: no waiting out the hour's lease
        await eventually(
            lambda: shared(tmp_path, "SELECT status FROM outbox") == [("delivered",)], timeout=10, describe="delivery"
        )
    assert contents(fake_discord, channel) == parts  # part 1 read back, the rest posted once
