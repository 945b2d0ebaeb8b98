"""``python -m bot [migrate|health] --config FILE [--check] [--shards 0-3 --shard-count 8]``: validate the config
(its secrets, each MCP server and ACP agent started once, the database reached: every problem named, a missing
token among them, exit 0 only if the bot could start), apply the database's migrations, say whether the process
running those shards is alive (its heartbeat; a container's health check), or run the bot (those shards only).

Configuration and environment problems, a rejected token, and a Discord that answers the log-in with an error
print one line naming what to fix, and exit 1; never a traceback. An unreachable Discord is waited out (see
``ThreadboundBot.start``). SIGTERM and SIGINT close the bot cleanly, exit 0, within a bound (``bot.stopping``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from typing import TYPE_CHECKING

from bot.config import Config, ConfigError, check_secrets, load_config, missing_secrets, required_env_vars
from bot.shards import Shards, ShardsError, parse_shards, with_shards
from bot.stopping import StopSignals

if TYPE_CHECKING:
    from bot.redaction import Redactor


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bot", description="Run the threadbound Discord bot.")
    parser.add_argument(
        "command",
        nargs="?",
        choices=["migrate", "health"],
        help="migrate: apply the migrations, then exit; health: exit 0 if the process with this executor id is alive",
    )
    parser.add_argument("--config", default="config.toml", help="path to the TOML config (default: config.toml)")
    parser.add_argument("--check", action="store_true", help="validate the config and environment, then exit")
    parser.add_argument("--shards", help="run only these Discord shards: 2, 0-3 or 0-1,4 (with --shard-count)")
    parser.add_argument("--shard-count", help="how many shards the bot has in all, over every process")
    return parser.parse_args(argv)


async def _mcp_server_problems(config: Config) -> dict[str, str | None]:
    """Start every configured MCP server and list its tools: for each, what is wrong (it cannot start, or its
    ``read_only_tools`` name tools it does not have), or ``None``."""
    if not config.mcp.servers:
        return {}
    from bot.agents.mcp_servers import McpServers

    servers = McpServers(config.mcp.servers)
    names = sorted(config.mcp.servers)
    reasons = await asyncio.gather(*(servers.probe(name) for name in names))
    return dict(zip(names, reasons, strict=True))


async def _acp_agent_problems(config: Config) -> dict[str, str | None]:
    """Start every configured ACP agent and open a session in it: for each, what is wrong, or ``None``."""
    if not config.acp_agents:
        return {}
    from bot.agents.acp_client import AcpAgents

    agents = AcpAgents(config.acp_agents)
    names = sorted(config.acp_agents)
    reasons = await asyncio.gather(*(agents.probe(name) for name in names))
    return dict(zip(names, reasons, strict=True))


async def _storage_problem(config: Config) -> str | None:
    """Why the configured database cannot be reached, or ``None``."""
    from storage.db import Database, DatabaseUnreachable

    try:
        await Database.probe(config.storage.database)
    except DatabaseUnreachable as error:
        return _unreachable(error)
    return None


def _storage(config: Config) -> str:
    """The configured database in words, without a password."""
    from storage.db import is_postgresql

    if is_postgresql(config.storage.database):
        from storage.postgres import describe

        return f"{describe(config.storage.database)} is reachable"
    return f"SQLite file {config.storage.local_file}"


async def _check(config: Config, path: str) -> tuple[list[str], list[str]]:
    """Every check of ``--check``: what passed and what is wrong, one line each.

    A missing secret is one problem among the others, not a stop: an admin checks a config before the bot has a
    token, and wants every other problem named in the same run.
    """
    passed = [_valid(config, path)]
    problems = missing_secrets(config)
    variables = dict.fromkeys(required_env_vars(config).values())
    if present := [variable for variable in variables if os.environ.get(variable)]:
        passed.append(f"environment variables set: {', '.join(present)}")
    storage, servers, agents = await asyncio.gather(
        _storage_problem(config), _mcp_server_problems(config), _acp_agent_problems(config)
    )
    if storage is None:
        passed.append(f"storage: {_storage(config)}")
    else:
        problems.append(storage)
    if started := [name for name, reason in servers.items() if reason is None]:
        passed.append(f"MCP servers start: {', '.join(started)}")
    problems += [f"mcp.servers.{name} {reason}" for name, reason in servers.items() if reason is not None]
    if started := [name for name, reason in agents.items() if reason is None]:
        passed.append(f"ACP agents start: {', '.join(started)}")
    problems += [f"acp_agents.{name} {reason}" for name, reason in agents.items() if reason is not None]
    return passed, problems


def _valid(config: Config, path: str) -> str:
    """The config parsed: its file, providers and MCP servers, in one line."""
    providers = ", ".join(sorted(config.providers)) or "none (offline model)"
    servers = f"; MCP servers: {', '.join(sorted(config.mcp.servers))}" if config.mcp.servers else ""
    return f"config {path} is valid (providers: {providers}{servers})"


def _report(passed: list[str], problems: list[str]) -> int:
    """Print the check's results and return its exit code.

    What passed goes to stdout, each problem to stderr, then whether the bot could start.
    """
    for line in passed:
        print(f"threadbound: {line}.", flush=True)
    for line in problems:
        print(f"threadbound: {line}", file=sys.stderr, flush=True)
    if problems:
        count = f"{len(problems)} problem" + ("s" if len(problems) > 1 else "")
        print(f"threadbound: the bot cannot start: {count} to fix.", flush=True)
        return 1
    print("threadbound: the bot can start.", flush=True)
    return 0


def _unreachable(error: Exception) -> str:
    return f"storage cannot be reached: {error}"


async def _migrate(config: Config) -> str:
    """Apply the migrations not applied yet; what was done, in one line."""
    from storage.db import Database

    database = await Database.open(config.storage.database, migrate=False)
    try:
        applied = await database.migrate()
    finally:
        await database.close()
    return f"applied {', '.join(applied)}" if applied else "the database is up to date"


async def _health(config: Config) -> tuple[bool, str]:
    """Whether this config's executor is alive and what it last said, in one line.

    The executor is the process running as the config's executor id; alive: its heartbeat is younger than the
    lease."""
    import socket
    import time
    from pathlib import Path

    from storage.db import Database, is_postgresql
    from storage.processes import ProcessRepository

    executor_id, lease = config.durability.executor_id, config.durability.lease_seconds
    if not is_postgresql(config.storage.database) and not Path(config.storage.local_file).exists():
        return False, f"no process has run as executor {executor_id!r} (no database at {config.storage.local_file})"
    database = await Database.open(config.storage.database)
    try:
        process = await ProcessRepository(database).get(executor_id)
    finally:
        await database.close()
    if process is None:
        return False, f"no process has run as executor {executor_id!r}"
    age = time.time() - process.heartbeat_at
    where = f"pid {process.pid}" + ("" if process.host == socket.gethostname() else f" on {process.host}")
    if process.claimed_by is not None:
        return False, f"executor {executor_id!r} ({where}) was found dead and taken over by {process.claimed_by!r}"
    if age > lease:
        stopped = "stopped" if process.heartbeat_at == 0 else f"last beat {age:.0f}s ago, lease {lease:g}s"
        return False, f"executor {executor_id!r} ({where}) is not alive ({stopped})"
    return True, f"executor {executor_id!r} ({where}) is alive, last beat {age:.0f}s ago"


async def _run(config: Config, token: str, shards: Shards | None, stop: StopSignals, redact: Redactor) -> None:
    """Run the bot until Discord's connection ends or a stop signal comes; then close it (``async with``)."""
    from bot.app import ThreadboundBot

    stop.install()
    async with ThreadboundBot(config, shards=shards, redact=redact) as bot:
        running = asyncio.create_task(bot.start(token), name="bot")
        stopping = asyncio.create_task(stop.requested.wait(), name="stop-signal")
        await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not running.done():  # logging in, setting up or connected: whichever, it ends here and the bot closes
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
        else:
            running.result()


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        shards = parse_shards(args.shards, args.shard_count)
        config = with_shards(load_config(args.config), shards)
        if args.command is None and not args.check:
            check_secrets(config)
    except (ConfigError, ShardsError) as error:
        print(f"threadbound: {error}", file=sys.stderr)
        return 1
    if args.command == "migrate":
        from storage.db import DatabaseUnreachable

        try:
            print(f"threadbound: {asyncio.run(_migrate(config))}.")
        except DatabaseUnreachable as error:
            print(f"threadbound: {_unreachable(error)}", file=sys.stderr)
            return 1
        return 0
    if args.command == "health":
        from storage.db import DatabaseUnreachable

        try:
            alive, line = asyncio.run(_health(config))
        except DatabaseUnreachable as error:
            alive, line = False, _unreachable(error)
        print(f"threadbound: {line}.", file=sys.stdout if alive else sys.stderr)
        return 0 if alive else 1
    if args.check:
        return _report(*asyncio.run(_check(config, args.config)))

    # Imported only to run: checking a config needs none of the bot (discord.py alone takes a while to import).
    import aiohttp
    import discord

    from bot.core.durable.executors import ExecutorTaken
    from bot.discord_adapter.failures import short_reason
    from bot.logging_setup import configure_logging
    from bot.redaction import Redactor

    redact = Redactor.of(config)  # the secrets, read once: the logs and the bot share them
    configure_logging(config.logging.level, config.logging.format, redact)
    token = os.environ[config.discord.token_env]
    stop = StopSignals()
    try:
        asyncio.run(_run(config, token, shards, stop, redact))
    except ExecutorTaken as taken:
        print(f"threadbound: {taken}", file=sys.stderr)
        return 1
    except discord.LoginFailure:
        print(f"threadbound: Discord rejected the token in {config.discord.token_env} (401).", file=sys.stderr)
        return 1
    except discord.PrivilegedIntentsRequired:
        print(
            "threadbound: enable the Message Content intent for this bot in the Discord Developer Portal "
            "(Bot → Privileged Gateway Intents).",
            file=sys.stderr,
        )
        return 1
    except (discord.HTTPException, aiohttp.ClientError) as error:
        print(
            f"threadbound: could not start: Discord at {config.discord.api_base_url}: {short_reason(error)}.",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:  # before the handlers are installed
        return 0
    stop.stopped()
    return 0


if __name__ == "__main__":
    sys.exit(main())
