"""The Prometheus endpoint seen by an operator's scraper, over HTTP, with the bot against the fakes: off (no port) by
default; with ``[metrics] listen``, a model's failure counted by provider and model, an approval waiting and then
decided, an announcement's retry and its delivery lag, a stalled event loop, runs by agent and status from the store
(after a restart too), members and servers never labels."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import time
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from bench.wire_announcements import bot_process, spawned
from bot.metrics import MAX_MODEL_LABELS, OTHER, Metrics
from bot.metrics_service import NewMarks
from storage.gauges import RunMark
from tests.fakes.openai_server import Step
from tests.harness import announcement_for, spawned_run_id
from tests.test_wire_approvals import approval_request, asking, decide, recorded
from tests.test_wire_control import member, spawn
from tests.test_wire_delivery import MESSAGES_ROUTE
from tests.test_wire_fallback import BACKUP, PRIMARY, SCOUT, fail
from tests.test_wire_status import buttons

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def metrics_on(port: int) -> str:
    return f'[metrics]\nlisten = "127.0.0.1:{port}"\nrefresh_seconds = 1\n'


async def scrape(port: int) -> Samples:
    """Every sample the endpoint serves, by name and labels."""
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/metrics") as response:
        assert response.status == 200
        text = await response.text()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value (0 when the series is not there yet)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


async def until(port: int, name: str, expected: float, timeout: float = 15.0, **labels: str) -> Samples:
    """Scrape until ``name{labels}`` is ``expected``; the samples that showed it."""
    seen: dict[str, Samples] = {}

    async def check() -> bool:
        seen["last"] = await scrape(port)
        return value(seen["last"], name, **labels) == expected

    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"{name}{labels} stayed {value(seen['last'], name, **labels)}"
        await asyncio.sleep(0.2)
    return seen["last"]


def listening_ports() -> set[int]:
    """The TCP ports this process listens on (Linux: its socket inodes matched in /proc/net/tcp*)."""
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if found := re.fullmatch(r"socket:\[(\d+)\]", target):
            inodes.add(found[1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def no_member_or_server_in_labels(samples: Samples, *ids: int) -> None:
    labels = {value for _, pairs in samples for _, value in pairs}
    assert not {str(i) for i in ids} & labels


def delta(after: Samples, before: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


async def test_a_bot_process_serves_its_counters_and_they_move_after_a_spawn(world):
    """``python -m bot`` in a process of its own, as deployed: scraped before and after a ``/subagents spawn``."""
    port = free_port()
    world.extra_config = metrics_on(port)
    world.llm.reply("Counted.", prompt_tokens=12, completion_tokens=7)
    async with bot_process(world):
        before = await scrape(port)
        run_id = await spawned(world, world.channel, "Count me")
        await world.discord.wait_for_message(world.channel, announcement_for(run_id), timeout=30)
        after = await until(port, "threadbound_runs", 1, agent="researcher", status="completed")
        after = await until(port, "threadbound_delivery_lag_seconds_count", 1)

        model = {"provider": "fake", "model": "gpt-4o-mini"}
        assert delta(after, before, "threadbound_runs_started_total", agent="researcher") == 1
        assert delta(after, before, "threadbound_runs_ended_total", agent="researcher", outcome="completed") == 1
        assert delta(after, before, "threadbound_model_request_seconds_count", **model) == 1
        assert value(after, "threadbound_model_request_seconds_sum", **model) > 0
        assert delta(after, before, "threadbound_model_tokens_total", **model, direction="input") == 12
        assert delta(after, before, "threadbound_model_tokens_total", **model, direction="output") == 7
        assert delta(after, before, "threadbound_delivery_lag_seconds_count") == 1
        assert value(after, "threadbound_runs", agent="researcher", status="running") == 0
        assert value(after, "threadbound_approvals_waiting") == 0
        assert value(after, "process_resident_memory_bytes") > 0  # the process's own collectors are there too
    with socket.socket() as probe:  # the process stopped, its port is free
        assert probe.connect_ex(("127.0.0.1", port)) != 0


async def test_metrics_are_off_by_default_and_no_port_is_opened(world):
    world.llm.reply("Done.")
    before = listening_ports()
    bot = await world.start_bot()
    run_id = await spawn(world)
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert listening_ports() == before
    assert bot.config.metrics.address is None


async def test_a_failing_model_is_counted_by_provider_and_model_and_its_fallback_answers(world):
    port = free_port()
    fail(world, 500, PRIMARY)
    world.llm.reply("Scouted.", model=BACKUP, prompt_tokens=10, completion_tokens=5)
    world.extra_config = SCOUT + metrics_on(port)
    await world.start_bot()
    assert port in listening_ports()
    errors = "threadbound_model_request_errors_total"
    assert value(await scrape(port), errors, provider="fake", model=PRIMARY, reason="http_500") == 0

    run_id = await spawn(world, agent="scout", task="Scout the area")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    after = await until(port, "threadbound_runs_ended_total", 1, agent="scout", outcome="completed")

    assert value(after, errors, provider="fake", model=PRIMARY, reason="http_500") == 1
    assert value(after, errors, provider="fake", model=BACKUP, reason="http_500") == 0
    latency = "threadbound_model_request_seconds_count"
    assert value(after, latency, provider="fake", model=PRIMARY) == 1  # the failed request's time, too
    assert value(after, latency, provider="fake", model=BACKUP) == 1
    tokens = "threadbound_model_tokens_total"
    assert value(after, tokens, provider="fake", model=BACKUP, direction="input") == 10
    assert value(after, tokens, provider="fake", model=BACKUP, direction="output") == 5
    # priced at fake/gpt-4o's configured price: 10 × $1000/M + 5 × $2000/M
    assert abs(value(after, "threadbound_model_cost_dollars_total", provider="fake", model=BACKUP) - 0.02) < 1e-9
    assert value(after, "threadbound_runs_started_total", agent="scout") == 1


async def test_an_approval_waits_in_the_gauge_until_the_owner_decides_and_a_strangers_click_changes_nothing(world):
    port = free_port()
    calls = asking(world)
    world.extra_config += metrics_on(port)
    await world.start_bot()
    run_id = await spawn(world, task="Shout hi")
    request = await approval_request(world, lambda m: bool(buttons(m)))
    approval_id = world.rows("SELECT id FROM approvals")[0][0]
    waiting = await until(port, "threadbound_approvals_waiting", 1)
    assert value(waiting, "threadbound_runs", agent="researcher", status="awaiting_approval") == 1

    stranger = member(world, "mallory")
    refused = await decide(world, stranger, request, "approve", approval_id)
    assert "You can only approve tool calls of runs you started" in refused
    assert value(await scrape(port), "threadbound_approvals_waiting") == 1
    assert recorded(calls) == []

    await decide(world, world.alice, request, "approve", approval_id)
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    done = await until(port, "threadbound_approvals_waiting", 0)
    assert len(recorded(calls)) == 1
    no_member_or_server_in_labels(done, world.alice.id, stranger.id, world.guild.id, world.channel.id)


async def test_a_retried_announcement_counts_one_retry_and_its_lag_once_delivered(world):
    port = free_port()
    world.llm.reply("Done.")
    world.extra_config = metrics_on(port)
    await world.start_bot()
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 503, times=1)
    run_id = await spawn(world)
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    samples = await until(port, "threadbound_delivery_lag_seconds_count", 1)
    assert value(samples, "threadbound_delivery_retries_total") == 1
    assert 0 < value(samples, "threadbound_delivery_lag_seconds_sum") < 30


async def test_runs_of_two_members_on_two_servers_count_under_their_agent_and_the_store_keeps_them_after_a_restart(
    world,
):
    port = free_port()
    world.llm.default = lambda body: "Done."
    world.extra_config = metrics_on(port)
    world.guild_commands = False  # synced globally: the commands are there in the other server too
    other_guild = world.discord.add_guild("Other Guild")
    other_channel = world.discord.add_text_channel(other_guild, "elsewhere")
    bob = world.discord.add_user("bob")
    world.discord.add_member(other_guild, bob)
    bot = await world.start_bot()
    first = await spawn(world)
    inter = await world.discord.slash(bob, other_channel, "subagents spawn", agent="researcher", task="Look around")
    await world.discord.wait_ack(inter)
    await world.discord.wait_followup(inter)
    await world.discord.wait_for_message(world.channel, announcement_for(first))
    samples = await until(port, "threadbound_runs_ended_total", 2, agent="researcher", outcome="completed")
    assert value(samples, "threadbound_runs_started_total", agent="researcher") == 2
    assert value(samples, "threadbound_runs", agent="researcher", status="completed") == 2
    assert value(samples, "threadbound_lane_in_use", lane="subagent") == 0
    assert value(samples, "threadbound_lane_capacity", lane="subagent") > 0
    assert 0 <= value(samples, "threadbound_executor_heartbeat_age_seconds", executor="local") < 30
    no_member_or_server_in_labels(samples, world.alice.id, bob.id, world.guild.id, other_guild.id)
    await world.stop_bot(bot)
    assert port not in listening_ports()  # closed with the bot

    await world.start_bot()
    restarted = await until(port, "threadbound_runs", 2, agent="researcher", status="completed")
    assert value(restarted, "threadbound_runs_ended_total", agent="researcher", outcome="completed") == 0  # before


async def test_the_lane_shows_a_running_and_a_queued_run_from_a_thread_of_another_member_then_empties(world):
    port = free_port()
    world.extra_config = metrics_on(port) + "[agents.defaults.subagents]\nmax_concurrent = 1\n"
    world.llm.hang(then=Step.reply("First done."))
    world.llm.reply("Second done.")
    thread = world.discord.add_thread(world.channel, "planning")
    bob = member(world, "bob")
    await world.start_bot()
    first = await spawn(world)
    await world.llm.wait_hanging(1)
    inter = await world.discord.slash(bob, thread, "subagents spawn", agent="researcher", task="Queue me")
    await world.discord.wait_ack(inter)
    second = spawned_run_id(await world.discord.wait_followup(inter))

    busy = await until(port, "threadbound_lane_queued", 1, lane="subagent")
    assert value(busy, "threadbound_lane_in_use", lane="subagent") == 1
    assert value(busy, "threadbound_lane_capacity", lane="subagent") == 1
    assert value(busy, "threadbound_runs", agent="researcher", status="running") == 1
    assert value(busy, "threadbound_runs", agent="researcher", status="queued") == 1
    assert value(busy, "threadbound_runs_started_total", agent="researcher") == 1  # the queued one has not started

    world.llm.release()
    await world.discord.wait_for_message(world.channel, announcement_for(first))
    await world.discord.wait_for_message(thread, announcement_for(second))
    idle = await until(port, "threadbound_runs", 2, agent="researcher", status="completed")
    assert value(idle, "threadbound_lane_in_use", lane="subagent") == 0
    assert value(idle, "threadbound_lane_queued", lane="subagent") == 0
    assert value(idle, "threadbound_runs_started_total", agent="researcher") == 2
    no_member_or_server_in_labels(idle, world.alice.id, bob.id, thread.id, world.channel.id)


async def test_a_port_in_use_is_logged_and_the_bot_serves_people_without_its_endpoint(world):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        world.extra_config = metrics_on(port)
        world.llm.reply("Still here.")
        with capture_logs() as logs:
            await world.start_bot()
        run_id = await spawn(world)
        await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    (failed,) = [entry for entry in logs if entry["event"] == "metrics_listen_failed"]
    assert failed["listen"] == f"127.0.0.1:{port}" and "in use" in failed["error"]


async def test_a_blocked_event_loop_shows_as_a_stall(world):
    port = free_port()
    world.extra_config = metrics_on(port)
    await world.start_bot()
    await asyncio.sleep(0.3)  # the ticker is running
    time.sleep(0.5)  # the loop is held: nothing else runs
    samples = await _stall_after_refresh(port)
    assert value(samples, "threadbound_event_loop_stall_seconds") >= 0.3
    lateness = "threadbound_event_loop_lateness_seconds"
    late_ticks = value(samples, f"{lateness}_count") - value(samples, f"{lateness}_bucket", le="0.25")
    assert late_ticks >= 1  # the tick the block held up


async def _stall_after_refresh(port: int) -> Samples:
    deadline = time.monotonic() + 10
    while (samples := await scrape(port)) and value(samples, "threadbound_event_loop_stall_seconds") < 0.3:
        assert time.monotonic() < deadline, "the stall never showed"
        await asyncio.sleep(0.2)
    return samples


def test_models_past_the_cap_are_counted_as_other():
    metrics = Metrics()
    for n in range(MAX_MODEL_LABELS + 5):
        metrics.model_answered(f"fake/model-{n}", 0.1, 1, 1, None)
    models = {
        sample.labels["model"]
        for family in metrics.registry.collect()
        if family.name == "threadbound_model_request_seconds"
        for sample in family.samples
    }
    assert len(models) == MAX_MODEL_LABELS + 1 and OTHER in models


def test_runs_seen_again_count_once_and_a_late_commit_still_counts():
    """The store's runs are read again past the last look (a commit may come after its time): each counts once."""
    metrics = Metrics()
    marks = NewMarks(metrics.runs_ended, floor=1000.0, outcome=True)
    before_start = RunMark("r0", "researcher", "completed", 990.0)
    first = RunMark("r1", "researcher", "completed", 1001.0)
    assert marks.since() == 1000.0
    marks.count([before_start, first], now=1005.0)
    late = RunMark("r2", "researcher", "failed", 1003.0)  # ended before the last look, committed after it
    assert marks.since() <= late.at
    marks.count([first, late], now=1010.0)
    ended = {
        (sample.labels["outcome"], sample.value)
        for family in metrics.registry.collect()
        if family.name == "threadbound_runs_ended"
        for sample in family.samples
        if sample.name.endswith("_total")
    }
    assert ended == {("completed", 1.0), ("failed", 1.0)}  # r0 ended before the process started; r1 counted once
