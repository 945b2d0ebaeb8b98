"""Start-up against a Discord that cannot be reached or says no: ``python -m bot`` waits out an outage (one line
per retry) and comes up by itself, and a rejected token exits 1 with one line; never a traceback."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest
import structlog

from tests.harness import API_KEY, BOT_TOKEN, announcement_for, spawned_run_id
from tests.polling import eventually

UNRESOLVABLE_API = "http://discord.invalid/api/v10"


class BotProcess:
    """``python -m bot --config FILE`` with the test's environment, its stderr read line by line as it comes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self.lines: list[str] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, config_path: Path, token: str = BOT_TOKEN) -> BotProcess:
        env = {**os.environ, "TB_TEST_TOKEN": token, "TB_TEST_API_KEY": API_KEY}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "--config",
            str(config_path),
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def _read(self) -> None:
        assert self._process.stderr is not None
        async for raw in self._process.stderr:
            self.lines.append(raw.decode().rstrip("\n"))
            self._notify()
        self._notify()

    def _notify(self) -> None:
        event, self._changed = self._changed, asyncio.Event()
        event.set()

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)

    def events(self, pattern: str) -> list[str]:
        """The structlog events (JSON lines) whose whole text matches ``pattern``."""
        events = [json.loads(line)["event"] for line in self.lines if line.startswith("{")]
        return [event for event in events if re.fullmatch(pattern, event)]

    async def wait_for_events(self, pattern: str, count: int = 1, timeout: float = 30.0) -> list[str]:
        def check() -> list[str] | None:
            if len(found := self.events(pattern)) >= count:
                return found
            assert not self._reader.done(), f"the bot exited before logging {pattern!r}:\n{self.stderr}"
            return None

        return await eventually(
            check,
            timeout=timeout,
            describe=lambda: f"{count} log event(s) matching {pattern!r}; stderr so far:\n{self.stderr}",
            changed=lambda: self._changed,
        )

    async def exit_code(self, timeout: float = 30.0) -> int:
        await asyncio.wait_for(self._reader, timeout)
        return await self._process.wait()

    async def interrupt(self, signum: signal.Signals = signal.SIGINT, timeout: float = 30.0) -> int:
        """Ctrl-C as a person would stop it (or ``signum``: SIGTERM from ``docker stop``); the exit code once it
        has stopped, within ``timeout``."""
        if self._process.returncode is None:
            self._process.send_signal(signum)
        return await self.exit_code(timeout)

    def kill(self) -> None:
        if self._process.returncode is None:
            self._process.kill()


def assert_clean(stderr: str) -> None:
    """No traceback, no alarm about optional voice packages, no secret."""
    assert "Traceback" not in stderr
    assert "voice will NOT be supported" not in stderr
    assert BOT_TOKEN not in stderr and API_KEY not in stderr


async def test_unresolvable_discord_is_retried_with_backoff_one_line_each(world):
    config_path = world.tmp_path / "config.toml"
    config_path.write_text(world.config_text().replace(world.discord.api_base_url, UNRESOLVABLE_API))
    bot = await BotProcess.start(config_path)
    try:
        await bot.wait_for_events(rf"cannot reach Discord at {re.escape(UNRESOLVABLE_API)}: [^;]+; retrying in 2s")
    finally:
        exit_code = await bot.interrupt()

    assert not world.db_path.exists()  # set-up (storage, core, cogs) waits for a log-in
    assert exit_code == 0
    assert_clean(bot.stderr)


async def test_bot_started_while_discord_is_down_comes_up_once_discord_is_back(world):
    world.llm.reply("back online")
    config_path = world.write_config()
    port = world.discord.port
    await world.discord.stop()
    bot = await BotProcess.start(config_path)
    try:
        api = re.escape(world.discord.api_base_url)
        await bot.wait_for_events(rf"cannot reach Discord at {api}: Connection refused; retrying in 2s")
        assert world.discord.requests == [] and not world.db_path.exists()

        await world.discord.start(port=port)
        await world.discord.wait_for_sessions(1, timeout=30)
        assert [r.status for r in world.discord.requests_matching("GET", r"^/users/@me$")] == [200]
        await world.discord.wait_for_request("PUT", r"/guilds/\d+/commands$", timeout=30)
        inter = await world.discord.slash(world.alice, world.channel, "subagents spawn", agent="researcher", task="Hi")
        run_id = spawned_run_id(await world.discord.wait_followup(inter))
        announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id), timeout=30)
        assert "back online" in announcement["content"]
    finally:
        exit_code = await bot.interrupt()

    assert exit_code == 0
    assert_clean(bot.stderr)


async def test_discord_failing_with_503_at_log_in_is_retried_until_the_bot_is_ready(world):
    world.llm.reply("still here")
    world.discord.inject_failure("GET", r"^/users/@me$", 503, times=2)
    with structlog.testing.capture_logs() as logs:
        await world.start_bot(retry_base_delay=0.05)

    assert [r.status for r in world.discord.requests_matching("GET", r"^/users/@me$")] == [503, 503, 200]
    api = world.discord.api_base_url
    assert [entry["event"] for entry in logs if entry["event"].startswith("cannot reach Discord")] == [
        f"cannot reach Discord at {api}: 503 Service Unavailable; retrying in 0.05s",
        f"cannot reach Discord at {api}: 503 Service Unavailable; retrying in 0.1s",
    ]
    inter = await world.discord.slash(world.alice, world.channel, "subagents spawn", agent="researcher", task="Hi")
    run_id = spawned_run_id(await world.discord.wait_followup(inter))
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "still here" in announcement["content"]


@pytest.mark.parametrize(
    ("token", "api_path", "status", "expected"),
    [
        ("not-the-bot-token-42", "/api/v10", 401, "threadbound: Discord rejected the token in TB_TEST_TOKEN (401)."),
        (BOT_TOKEN, "/api/v9", 404, "threadbound: could not start: Discord at {base}/api/v9: 404 Not Found."),
    ],
    ids=["rejected-token", "wrong-api-url"],
)
async def test_log_in_refused_exits_1_with_one_line(world, token, api_path, status, expected):
    config_path = world.tmp_path / "config.toml"
    config_path.write_text(world.config_text().replace("/api/v10", api_path))
    bot = await BotProcess.start(config_path, token=token)
    try:
        exit_code = await bot.exit_code()
    finally:
        bot.kill()

    assert exit_code == 1
    assert [r.status for r in world.discord.requests if r.path.endswith("/users/@me")] == [status]
    not_logs = [line for line in bot.lines if not line.startswith("{")]
    assert not_logs == [expected.format(base=world.discord.base_url)]
    assert bot.lines[-1] == not_logs[0]
    assert bot.events("cannot reach Discord.*") == []
    assert not world.db_path.exists()
    assert_clean(bot.stderr)
    assert token not in bot.stderr
