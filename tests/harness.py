"""The wire world that tests and bench share: the real bot against loopback fakes.

The fakes stand for Discord and an OpenAI-compatible server; the bot keeps its state in a real SQLite file (or
PostgreSQL, see ``tests/stores.py``).

The pytest fixtures that build these live in ``tests/conftest.py``; ``bench/`` builds them by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.app import ThreadboundBot
from bot.config import Config, parse_config
from tests import stores
from tests.fakes.discord_server import FakeChannel, FakeDiscord, FakeGuild, FakeUser
from tests.fakes.openai_server import FakeOpenAI
from tests.polling import eventually

BOT_TOKEN = "fake-bot-token-0123456789"
API_KEY = "sk-test-secret-key-42"
CLOSE_TIMEOUT = 60  # seconds a bot may take to close (it takes well under one)
QUICK_STATUS_EDITS = 0.05  # for tests that watch status messages change: the default throttle is 1 s an edit
# for tests that restart the bot: a run resumed at a start waits for the next poll of DBOS's queue (1 s by default)
QUICK_RECOVERY = "[durability]\nqueue_poll_seconds = 0.2\n"


@dataclass
class World:
    """A fake guild with one text channel and one member, Alice.

    Its helpers run the bot against the fakes."""

    discord: FakeDiscord
    llm: FakeOpenAI
    tmp_path: Path
    monkeypatch: pytest.MonkeyPatch
    guild: FakeGuild = field(init=False)  # these three are set by furnish()
    channel: FakeChannel = field(init=False)
    alice: FakeUser = field(init=False)
    extra_config: str = ""
    discord_extra: str = ""  # more keys of the [discord] table
    vision_models: list[str] = field(default_factory=list)  # [providers.fake] vision_models
    offline: bool = False
    status_messages: bool = True
    # answers shown while written: the bot's default is on; tests of the final post see it posted whole
    stream_answers: bool = False
    stream_edit_seconds: float = 1.2  # the bot's default
    status_edit_interval: float = 1.0  # the bot's default
    moderator_role_ids: list[int] = field(default_factory=list)
    guild_commands: bool = True
    clock: Callable[[], float] = time.time  # the core's time
    bots: list[ThreadboundBot] = field(default_factory=list)
    runners: dict[ThreadboundBot, asyncio.Task[None]] = field(default_factory=dict)  # each bot's start()

    @property
    def db_path(self) -> Path:
        return self.tmp_path / "threadbound.sqlite3"

    def config_text(self, extra: str = "") -> str:
        return f"""
[discord]
token_env = "TB_TEST_TOKEN"
api_base_url = "{self.discord.api_base_url}"
gateway_url = "{self.discord.gateway_url}"
{f"dev_guild_id = {self.guild.id}" if self.guild_commands else ""}
status_messages = {str(self.status_messages).lower()}
stream_answers = {str(self.stream_answers).lower()}
stream_edit_seconds = {self.stream_edit_seconds}
moderator_role_ids = {self.moderator_role_ids}
{self.discord_extra}
[storage]
{stores.storage_line(self.db_path)}
[logging]
format = "json"
{"" if self.offline else self.provider_config}
[agents.defaults]
model = "fake/gpt-4o-mini"
[agents.list.main]
[agents.list.researcher]
system_prompt = "You research things."
{self.extra_config}
{extra}
"""

    @property
    def provider_config(self) -> str:
        return f"""
[providers.fake]
type = "openai"
base_url = "{self.llm.base_url}"
api_key_env = "TB_TEST_API_KEY"
vision_models = {json.dumps(self.vision_models)}
"""

    def config(self) -> Config:
        return parse_config(self.config_text())

    def write_config(self) -> Path:
        path = self.tmp_path / "config.toml"
        path.write_text(self.config_text())
        return path

    async def start_bot(self, *, retry_base_delay: float = 0.05) -> ThreadboundBot:
        bot = ThreadboundBot(
            self.config(),
            retry_base_delay=retry_base_delay,
            guild_ready_timeout=0,  # ready at READY; every GUILD_CREATE is awaited below instead of a quiet time
            status_edit_interval=self.status_edit_interval,
            clock=self.clock,
        )
        self.bots.append(bot)
        runner = asyncio.create_task(bot.start(BOT_TOKEN))
        ready = asyncio.create_task(bot.wait_until_ready())
        done, _ = await asyncio.wait({runner, ready}, timeout=15, return_when=asyncio.FIRST_COMPLETED)
        if runner in done:
            ready.cancel()
            runner.result()
            raise AssertionError("bot stopped before it was ready")
        assert ready in done, "bot did not become ready within 15 s"
        self.runners[bot] = runner
        await eventually(
            lambda: not any(guild.unavailable for guild in bot.guilds),
            timeout=5,
            describe=lambda: f"GUILD_CREATE of guilds {[g.id for g in bot.guilds if g.unavailable]}",
        )
        return bot

    async def stop_bot(self, bot: ThreadboundBot) -> None:
        closing = asyncio.ensure_future(bot.close())
        await asyncio.wait({closing}, timeout=CLOSE_TIMEOUT)
        if not closing.done():  # the asyncio tasks' stacks say where, which pytest-timeout's thread dump does not
            raise AssertionError(f"the bot did not close within {CLOSE_TIMEOUT} s; its tasks:\n{task_stacks()}")
        closing.result()
        with contextlib.suppress(asyncio.CancelledError):
            await self.runners.pop(bot)
        self.bots.remove(bot)

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        return stores.query(self.db_path, sql, params)

    async def until(self, sql: str, expected: list[tuple], timeout: float = 5.0) -> None:
        """Wait until ``sql`` returns ``expected`` in the bot's database."""
        await eventually(
            lambda: self.rows(sql) == expected,
            timeout=timeout,
            describe=lambda: f"{sql} returned {self.rows(sql)!r}, not {expected!r}",
        )

    async def quiescent(self, timeout: float = 10.0) -> None:
        """Wait until no run is live and no announcement is pending.

        Then nothing more can reach Discord."""
        live = "SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running', 'waiting_children')"
        pending = "SELECT COUNT(*) FROM outbox WHERE status = 'pending'"
        await eventually(
            lambda: self.rows(f"SELECT ({live}) + ({pending})") == [(0,)],  # one snapshot of both tables
            timeout=timeout,
            describe=lambda: (
                f"quiescence: {self.rows(live)[0][0]} live run(s), {self.rows(pending)[0][0]} pending announcement(s)"
            ),
        )

    def status_message_ids(self) -> set[str]:
        return {str(row[0]) for row in self.rows("SELECT message_id FROM status_messages")}

    def bot_messages(self) -> list[dict]:
        """What the bot posted in the channel, live status messages aside."""
        status = self.status_message_ids()
        return [
            m
            for m in self.discord.channel_messages(self.channel)
            if m["author"]["id"] == str(self.discord.bot_user_id) and m["id"] not in status
        ]


def furnish(world: World, guild: str = "Test Guild", channels: tuple[str, ...] = ("general",)) -> list[FakeChannel]:
    """Furnish ``world``: a guild, its ``channels`` (the first is the world's), Alice a member.

    Returns the channels."""
    world.guild = world.discord.add_guild(guild)
    rooms = [world.discord.add_text_channel(world.guild, name) for name in channels]
    world.channel = rooms[0]
    world.alice = world.discord.add_user("alice")
    world.discord.add_member(world.guild, world.alice)
    return rooms


def task_stacks(tasks: set[asyncio.Task] | None = None) -> str:
    out = io.StringIO()
    for task in asyncio.all_tasks() if tasks is None else tasks:
        task.print_stack(file=out)
        print("  waiting in: " + " -> ".join(awaited_chain(task.get_coro())), file=out)
    return out.getvalue()


def awaited_chain(awaitable: object) -> list[str]:
    """Where a suspended task waits, coroutine by coroutine down to what it awaits.

    The task's own stack shows only its outermost frame."""
    chain = []
    while awaitable is not None:
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
        if frame is None:
            chain.append(repr(awaitable)[:200])
            break
        chain.append(f"{frame.f_code.co_qualname} ({frame.f_code.co_filename}:{frame.f_lineno})")
        awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom", None)
    return chain


def announcement_for(run_id_prefix: str):
    """Predicate: a public message that announces the run whose id starts with ``run_id_prefix``."""
    return lambda message: f"(run `{run_id_prefix}`)" in message["content"]


def answer_to(message: dict):
    """Predicate for the bot's answer to ``message``: a reply, or a webhook's next post.

    In a bound thread the sub-agent posts under its persona through a webhook, which cannot reply, so there the
    answer is the next post by a webhook."""

    def matches(candidate: dict) -> bool:
        if (candidate.get("message_reference") or {}).get("message_id") == message["id"]:
            return True
        return candidate.get("webhook_id") is not None and int(candidate["id"]) > int(message["id"])

    return matches


def spawned_run_id(reply: dict) -> str:
    content = reply["content"]
    return content.rsplit("run ", 1)[1].rstrip(").")
