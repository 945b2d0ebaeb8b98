"""``python -m bot``: bad or missing config gives one line naming what to fix (exit 1), never a traceback."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from storage.db import Database, migrations
from tests import stores


def run_bot(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("DISCORD_TOKEN", "OPENAI_API_KEY")}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "bot", *args], capture_output=True, text=True, env=environment, timeout=60
    )


def test_check_accepts_the_example_config():
    result = run_bot("--check", "--config", "config.example.toml", env={"DISCORD_TOKEN": "x"})
    assert result.returncode == 0
    assert "config config.example.toml is valid" in result.stdout


@pytest.mark.parametrize(
    ("config_text", "env", "expected"),
    [
        (None, {"DISCORD_TOKEN": "x"}, "not found; copy config.example.toml there and edit it"),
        ("", {}, "environment variable DISCORD_TOKEN is not set (named by discord.token_env in the config)"),
        (
            '[providers.openai]\ntype = "openai"\napi_key_env = "OPENAI_API_KEY"\n',
            {"DISCORD_TOKEN": "x"},
            "environment variable OPENAI_API_KEY is not set (named by providers.openai.api_key_env in the config)",
        ),
        ("[discord]\ntoken = 'abc'\n", {"DISCORD_TOKEN": "x"}, "unknown key 'discord.token'"),
        ("[agents.defaults.subagents]\nmax_concurrent = 'lots'\n", {}, "'agents.defaults.subagents.max_concurrent'"),
        (
            '[agents.list.main]\ndelegates = ["ghost"]\n',
            {"DISCORD_TOKEN": "x"},
            'agents.list.main.delegates[0].agent = "ghost" but agents.list.ghost is not configured',
        ),
        (
            '[[schedules]]\nname = "digest"\ncron = "61 * * * *"\nagent = "main"\nprompt = "go"\nchannel_id = 1\n',
            {"DISCORD_TOKEN": "x"},
            'schedules[0].cron = "61 * * * *" is not a valid cron expression: minute "61": the last value (61)',
        ),
    ],
)
def test_bad_config_or_environment_is_one_clear_line(tmp_path, config_text, env, expected):
    path = tmp_path / "config.toml"
    if config_text is not None:
        path.write_text(config_text)
    for args in (("--check", "--config", str(path)), ("--config", str(path))):
        result = run_bot(*args, env=env)
        assert result.returncode == 1
        assert expected in result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.own_store("--check with the default SQLite store: the store plays no part in starting MCP servers")
def test_check_starts_each_mcp_server_and_names_one_it_cannot(tmp_path):
    server = os.path.join(os.path.dirname(__file__), "fakes", "mcp_server.py")
    path = tmp_path / "config.toml"
    path.write_text(
        f'[mcp.servers.good]\ncommand = "{sys.executable}"\nargs = ["{server}"]\n'
        '[mcp.servers.broken]\ncommand = "/nonexistent/mcp-server"\n'
    )
    result = run_bot("--check", "--config", str(path), env={"DISCORD_TOKEN": "x"})
    assert result.returncode == 1
    assert result.stderr == (
        "threadbound: mcp.servers.broken cannot start: [Errno 2] No such file or directory: '/nonexistent/mcp-server'\n"
    )
    path.write_text(f'[mcp.servers.good]\ncommand = "{sys.executable}"\nargs = ["{server}"]\n')
    result = run_bot("--check", "--config", str(path), env={"DISCORD_TOKEN": "x"})
    assert result.returncode == 0 and "MCP servers: good" in result.stdout, result.stderr


@pytest.mark.own_store("--check with the default SQLite store: the store plays no part in starting ACP agents")
def test_check_starts_each_acp_agent_and_names_one_it_cannot(tmp_path):
    agent = os.path.join(os.path.dirname(__file__), "fakes", "acp_agent.py")
    path = tmp_path / "config.toml"
    good = f'[acp_agents.coder]\ncommand = "{sys.executable}"\nargs = ["{agent}"]\ncwd = "{tmp_path}"\n'
    path.write_text(good + f'[acp_agents.broken]\ncommand = "/nonexistent/acp-agent"\ncwd = "{tmp_path}"\n')
    result = run_bot("--check", "--config", str(path), env={"DISCORD_TOKEN": "x"})
    assert result.returncode == 1
    assert result.stderr.startswith("threadbound: acp_agents.broken is unavailable: "), result.stderr
    assert "ACP agents start: coder" in result.stdout
    path.write_text(good)
    result = run_bot("--check", "--config", str(path), env={"DISCORD_TOKEN": "x"})
    assert result.returncode == 0 and "ACP agents start: coder" in result.stdout, result.stderr


@pytest.mark.own_store("--check with the default SQLite store: the store plays no part in starting MCP servers")
def test_check_names_read_only_tools_a_server_does_not_have(tmp_path):
    server = os.path.join(os.path.dirname(__file__), "fakes", "mcp_server.py")
    path = tmp_path / "config.toml"
    good = f'[mcp.servers.good]\ncommand = "{sys.executable}"\nargs = ["{server}"]\n'
    path.write_text(good + 'read_only_tools = ["add", "serch"]\n')
    result = run_bot("--check", "--config", str(path), env={"DISCORD_TOKEN": "x"})
    assert result.returncode == 1
    assert (
        result.stderr == "threadbound: mcp.servers.good read_only_tools names tools the server does not have: serch\n"
    )
    path.write_text(good + 'read_only_tools = ["add"]\n')
    result = run_bot("--check", "--config", str(path), env={"DISCORD_TOKEN": "x"})
    assert result.returncode == 0 and "MCP servers: good" in result.stdout, result.stderr


def first_run_config(tmp_path, storage: str, extra: str = "") -> str:
    """A config naming a provider's key, with this ``[storage]`` line and ``extra`` tables after it."""
    path = tmp_path / "config.toml"
    path.write_text(
        '[providers.openai]\ntype = "openai"\napi_key_env = "OPENAI_API_KEY"\n'
        f'[agents.defaults]\nmodel = "openai/gpt-test"\n[storage]\n{storage}\n{extra}'
    )
    return str(path)


NO_TOKEN = "threadbound: environment variable DISCORD_TOKEN is not set (named by discord.token_env in the config)\n"
KEY = "sk-first-run-secret"


@pytest.mark.own_store("--check with its own SQLite store: the store plays no part in a missing token")
def test_check_without_a_token_reports_every_other_check_and_the_token_as_one_line(tmp_path):
    """An admin checks a config before the bot has a token: every other check still runs and says what it found,
    the token is one line among them, and the exit code says the bot could not start yet."""
    path = first_run_config(tmp_path, f'path = "{tmp_path / "bot.sqlite3"}"')
    result = run_bot("--check", "--config", path, env={"OPENAI_API_KEY": KEY})
    assert (result.returncode, result.stderr) == (1, NO_TOKEN)
    assert result.stdout == (
        f"threadbound: config {path} is valid (providers: openai).\n"
        "threadbound: environment variables set: OPENAI_API_KEY.\n"
        f"threadbound: storage: SQLite file {tmp_path / 'bot.sqlite3'}.\n"
        "threadbound: the bot cannot start: 1 problem to fix.\n"
    )
    assert KEY not in result.stdout + result.stderr


@pytest.mark.own_store("--check with its own store: one nobody listens on")
def test_check_without_a_token_still_names_every_other_fault(tmp_path):
    """A missing token does not stop the check: another missing key, an unreachable store and an MCP server that
    cannot start are named in the same run."""
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    storage = f'url = "postgresql://tb@127.0.0.1:{port}/threadbound"'
    path = first_run_config(tmp_path, storage, '[mcp.servers.broken]\ncommand = "/nonexistent/mcp-server"\n')
    result = run_bot("--check", "--config", path)
    assert result.returncode == 1
    problems = result.stderr.splitlines(keepends=True)
    assert problems[:2] == [
        NO_TOKEN,
        "threadbound: environment variable OPENAI_API_KEY is not set (named by providers.openai.api_key_env in the "
        "config)\n",
    ]
    assert problems[2].startswith(
        f"threadbound: storage cannot be reached: PostgreSQL database threadbound at 127.0.0.1:{port}: "
    )
    assert problems[3:] == [
        "threadbound: mcp.servers.broken cannot start: [Errno 2] No such file or directory: '/nonexistent/mcp-server'\n"
    ]
    assert result.stdout == (
        f"threadbound: config {path} is valid (providers: openai; MCP servers: broken).\n"
        "threadbound: the bot cannot start: 4 problems to fix.\n"
    )


@pytest.mark.own_store("--check with its own SQLite store: the store plays no part in the token")
def test_check_with_a_token_and_a_valid_config_says_the_bot_can_start_without_printing_the_token(tmp_path):
    path = first_run_config(tmp_path, f'path = "{tmp_path / "bot.sqlite3"}"')
    secrets = {"DISCORD_TOKEN": "MTIz.first-run-token", "OPENAI_API_KEY": KEY}
    result = run_bot("--check", "--config", path, env=secrets)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout == (
        f"threadbound: config {path} is valid (providers: openai).\n"
        "threadbound: environment variables set: DISCORD_TOKEN, OPENAI_API_KEY.\n"
        f"threadbound: storage: SQLite file {tmp_path / 'bot.sqlite3'}.\n"
        "threadbound: the bot can start.\n"
    )
    assert not any(secret in result.stdout + result.stderr for secret in secrets.values())


def applied(folder: str) -> str:
    return f"threadbound: applied {', '.join(name for _, name, _ in migrations(folder))}.\n"


def test_migrate_applies_the_migrations_once_without_a_discord_token(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(f'[storage]\npath = "{tmp_path / "data" / "bot.sqlite3"}"\n')
    first = run_bot("migrate", "--config", str(path))
    assert (first.returncode, first.stdout) == (0, applied("migrations/sqlite")), first.stderr
    assert first.stdout.startswith("threadbound: applied 0001_initial.sql, 0002_")
    again = run_bot("migrate", "--config", str(path))
    assert (again.returncode, again.stdout) == (0, "threadbound: the database is up to date.\n")


@pytest.mark.skipif(not stores.POSTGRESQL, reason="migrates a PostgreSQL database: run with TB_TEST_STORE=postgresql")
def test_migrate_brings_an_empty_postgresql_database_to_the_baseline(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(f'[storage]\nurl = "{stores.server().database(tmp_path / "empty", migrated=False)}"\n')
    first = run_bot("migrate", "--config", str(path))
    assert (first.returncode, first.stdout) == (0, applied("migrations/postgresql")), first.stderr
    assert first.stdout.startswith("threadbound: applied 0013_baseline.sql")
    again = run_bot("migrate", "--config", str(path))
    assert (again.returncode, again.stdout) == (0, "threadbound: the database is up to date.\n")


def test_an_unreachable_database_is_one_clear_line(tmp_path):
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = tmp_path / "config.toml"
    path.write_text(f'[storage]\nurl = "postgresql://tb@127.0.0.1:{port}/threadbound"\n')
    for args in (
        ("--check", "--config", str(path)),
        ("migrate", "--config", str(path)),
        ("health", "--config", str(path)),
    ):
        result = run_bot(*args, env={"DISCORD_TOKEN": "x"})
        assert result.returncode == 1
        assert result.stderr.startswith(
            f"threadbound: storage cannot be reached: PostgreSQL database threadbound at 127.0.0.1:{port}: "
        )
        assert "Connection refused" in result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_health_says_whether_the_process_of_these_shards_is_alive(tmp_path):
    """A container's health check: exit 0 while the process running as the executor id these flags give beats its
    heartbeat; exit 1, in one line, when none ever ran, it stopped, it went silent past its lease, or it was taken
    over as dead. Needs no Discord token."""
    database_path = tmp_path / "bot.sqlite3"
    path = tmp_path / "config.toml"
    path.write_text(f"[storage]\n{stores.storage_line(database_path)}\n[durability]\nlease_seconds = 30\n")
    shards = ("--config", str(path), "--shards", "0-1", "--shard-count", "4")

    def health() -> subprocess.CompletedProcess[str]:
        return run_bot("health", *shards)

    async def write(sql: str, params: tuple) -> None:
        db = await Database.open(stores.database(database_path))
        try:
            async with db.transaction() as tx:
                await tx.execute(sql, params)
        finally:
            await db.close()

    if not stores.POSTGRESQL:
        nothing = health()
        assert (nothing.returncode, nothing.stderr) == (
            1,
            f"threadbound: no process has run as executor 'shards-0-1-of-4' (no database at {database_path}).\n",
        )
        assert not database_path.exists()
    asyncio.run(write("SELECT 1", ()))  # the store exists, migrated: a bot ran, or `migrate` did
    never = health()
    assert (never.returncode, never.stderr) == (1, "threadbound: no process has run as executor 'shards-0-1-of-4'.\n")

    now = time.time()
    insert = (
        "INSERT INTO processes (executor_id, pid, host, shards, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)"
    )
    asyncio.run(write(insert, ("shards-0-1-of-4", 4242, socket.gethostname(), "0-1", now - 60, now - 2)))
    alive = health()
    assert alive.returncode == 0, alive.stderr
    assert alive.stdout.startswith("threadbound: executor 'shards-0-1-of-4' (pid 4242) is alive, last beat ")

    other = run_bot("health", "--config", str(path), "--shards", "2-3", "--shard-count", "4")
    assert (other.returncode, other.stderr) == (1, "threadbound: no process has run as executor 'shards-2-3-of-4'.\n")

    asyncio.run(write("UPDATE processes SET heartbeat_at = ?", (time.time() - 95,)))
    silent = health()
    assert silent.returncode == 1
    assert re.fullmatch(
        r"threadbound: executor 'shards-0-1-of-4' \(pid 4242\) is not alive \(last beat 9\ds ago, lease 30s\)\.\n",
        silent.stderr,
    ), silent.stderr

    asyncio.run(write("UPDATE processes SET heartbeat_at = 0", ()))
    assert health().stderr == "threadbound: executor 'shards-0-1-of-4' (pid 4242) is not alive (stopped).\n"

    asyncio.run(write("UPDATE processes SET heartbeat_at = ?, claimed_by = 'shards-2-3-of-4'", (time.time(),)))
    taken = health()
    assert (taken.returncode, taken.stderr) == (
        1,
        "threadbound: executor 'shards-0-1-of-4' (pid 4242) was found dead and taken over by 'shards-2-3-of-4'.\n",
    )
