"""The tests' fixtures: the fakes, the wire world around them, and checks every test gets.

The world itself is built in ``tests/harness.py``, shared with ``bench/``. Every test gets two checks: no task is
left behind, and discord.py's endpoints are put back."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

import discord
import pytest
import structlog

from tests import stores
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI
from tests.harness import API_KEY, BOT_TOKEN, World, furnish, task_stacks

LEFT_TASKS_TIMEOUT = 20  # seconds the tasks a test leaves may take to end once cancelled

# structlog's default console renders a logged exception with rich (installed with fastmcp) and every local of
# every frame: seconds per traceback. Tests log plain tracebacks, as production's processors do.
structlog.configure(
    processors=[
        *structlog.get_config()["processors"][:-1],
        structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback),
    ]
)


def pytest_collection_modifyitems(config, items):
    """With ``TB_TEST_STORE=postgresql``, skip what only SQLite does, and everything when there is no PostgreSQL."""
    if not stores.POSTGRESQL:
        return
    if stores.postgres_bindir() is None:
        missing = pytest.mark.skip(reason="TB_TEST_STORE=postgresql, but no initdb/pg_ctl here (set TB_PG_BINDIR)")
        for item in items:
            item.add_marker(missing)
        return
    stores.server()  # started here, outside any test's event loop
    for item in items:
        if (marker := item.get_closest_marker("sqlite_only")) is not None:
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {marker.args[0]}"))
        if (marker := item.get_closest_marker("own_store")) is not None:
            item.add_marker(pytest.mark.skip(reason=f"ran in the default pass: {marker.args[0]}"))


def pytest_sessionfinish(session, exitstatus):
    stores.stop_server()


@pytest.fixture(autouse=True)
async def _no_task_refuses_to_end(pytestconfig):
    """After each test, once its bots are closed and its fakes stopped (this fixture is set up before them), cancel
    the tasks left and wait for them. One that does not end is written out at once with its stack, and fails the
    test (the event loop's close after it still waits on it, until pytest-timeout): before, such a task hung the run
    with no word of which task it was (seen twice, under load)."""
    yield
    left = asyncio.all_tasks() - {asyncio.current_task()}
    for task in left:
        task.cancel()
    if left:
        _, stuck = await asyncio.wait(left, timeout=LEFT_TASKS_TIMEOUT)
        if stuck:  # written out now: the event loop's close that follows hangs on them until pytest-timeout
            report = f"{len(stuck)} task(s) did not end when cancelled:\n{task_stacks(stuck)}"
            capture = pytestconfig.pluginmanager.getplugin("capturemanager")  # None under -p no:capture
            with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
                print(report, file=sys.stderr, flush=True)
            raise AssertionError(report)


@pytest.fixture(autouse=True)
def _restore_discord_endpoints():
    """The bot points discord.py's class-level endpoints at the fake; put them back after each test."""
    base, gateway = discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    yield
    discord.http.Route.BASE = base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = gateway


@pytest.fixture
def calls(tmp_path, monkeypatch) -> Path:
    """The file the MCP test server (``tests/fakes/mcp_server.py``) records its calls in; the environment it may
    and may not see."""
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TB_TEST_MCP_CALLS", str(path))
    monkeypatch.setenv("TB_TEST_GREETING", "YO")
    monkeypatch.setenv("TB_SECRET_TOKEN", "do-not-leak")  # like the bot's token: never passed to a server
    return path


@pytest.fixture
async def fake_discord():
    fake = FakeDiscord(bot_token=BOT_TOKEN)
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def llm():
    fake = FakeOpenAI()
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def world(fake_discord, llm, tmp_path, monkeypatch):
    monkeypatch.setenv("TB_TEST_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("TB_TEST_API_KEY", API_KEY)
    w = World(fake_discord, llm, tmp_path, monkeypatch)
    furnish(w)
    yield w
    for bot in list(w.bots):
        await w.stop_bot(bot)
