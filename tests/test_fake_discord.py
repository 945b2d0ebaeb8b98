"""Contract tests: a bare discord.py 2.7.1 ``commands.Bot`` against the loopback fake Discord.

Each test proves one thing the project's integration tests will rely on. If a discord.py upgrade changes a
payload shape, one of these fails first, with the route in its name.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import discord
import pytest
import pytest_asyncio
import yarl
from discord import app_commands
from discord.ext import commands

from tests.fakes.discord_server import FakeDiscord
from tests.polling import NeverHappened

TOKEN = "fake-bot-token"
MANAGE_THREADS = discord.Permissions(manage_threads=True)


@pytest_asyncio.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    fake = FakeDiscord(bot_token=TOKEN)
    await fake.start()
    old_base, old_gateway = discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    discord.http.Route.BASE = fake.api_base_url
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.gateway_url)
    try:
        yield fake
    finally:
        discord.http.Route.BASE = old_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway
        await fake.stop()
    assert fake.unhandled_requests == [], f"discord.py called routes the fake does not serve: {fake.unhandled_requests}"


class World:
    def __init__(self, fake: FakeDiscord) -> None:
        self.guild = fake.add_guild("Test Guild")
        self.channel = fake.add_text_channel(self.guild, "general")
        self.alice = fake.add_user("alice")
        # fake.slash() does not apply default_member_permissions (guild admins can override them on Discord),
        # so alice may run /subagents; bot-side permission checks are what tests should assert.
        fake.add_member(self.guild, self.alice, permissions=discord.Permissions(send_messages=True))


@pytest.fixture
def world(fake: FakeDiscord) -> World:
    return World(fake)


Handler = Callable[[discord.Interaction, str, str], Awaitable[None]]


class Probe:
    """What the test bot saw: app-command errors, command calls, on_message, resumes."""

    def __init__(self) -> None:
        self.handler: Handler | None = None
        self.calls: list[tuple[str, str]] = []
        self.errors: asyncio.Queue[BaseException] = asyncio.Queue()
        self.messages: asyncio.Queue[discord.Message] = asyncio.Queue()
        self.resumed = asyncio.Event()
        self.ready = asyncio.Event()


def make_bot(guild_id: int, *, intents: discord.Intents | None = None) -> tuple[commands.Bot, Probe]:
    if intents is None:
        intents = discord.Intents.default()
        intents.message_content = True
    # guild_ready_timeout: discord.py otherwise waits 2 s after the last GUILD_CREATE before on_ready.
    bot = commands.Bot(command_prefix="!", intents=intents, guild_ready_timeout=0.05)
    probe = Probe()

    group = app_commands.Group(name="subagents", description="Manage sub-agents", default_permissions=MANAGE_THREADS)

    @group.command(name="spawn", description="Spawn a sub-agent")
    @app_commands.describe(agent="Agent id", task="What to do")
    async def spawn(interaction: discord.Interaction, agent: str, task: str) -> None:
        probe.calls.append((agent, task))
        assert probe.handler is not None, "test forgot to set probe.handler"
        await probe.handler(interaction, agent, task)

    @spawn.autocomplete("agent")
    async def agent_autocomplete(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        names = ["main", "mapper", "reviewer"]
        return [app_commands.Choice(name=n, value=n) for n in names if n.startswith(current)]

    bot.tree.add_command(group, guild=discord.Object(guild_id))

    @bot.tree.error
    async def on_app_command_error(interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
        probe.errors.put_nowait(getattr(error, "original", error))

    async def on_ready() -> None:
        probe.ready.set()

    async def on_message(message: discord.Message) -> None:
        probe.messages.put_nowait(message)

    async def on_resumed() -> None:
        probe.resumed.set()

    bot.add_listener(on_ready, "on_ready")
    bot.add_listener(on_message, "on_message")
    bot.add_listener(on_resumed, "on_resumed")
    return bot, probe


@contextlib.asynccontextmanager
async def running(bot: commands.Bot, probe: Probe, *, sync_guild: int | None = None) -> AsyncIterator[commands.Bot]:
    task = asyncio.create_task(bot.start(TOKEN))
    ready = asyncio.create_task(probe.ready.wait())
    done, _ = await asyncio.wait({task, ready}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        ready.cancel()
        task.result()  # re-raise the login/connect failure
        raise AssertionError("bot.start() returned before on_ready")
    if ready not in done:
        ready.cancel()
        await bot.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 5)
        raise AssertionError("bot did not become ready within 5 s")
    try:
        if sync_guild is not None:
            await bot.tree.sync(guild=discord.Object(sync_guild))
        yield bot
    finally:
        await bot.close()
        await asyncio.wait_for(task, 5)


async def next_item(queue: asyncio.Queue[Any], timeout: float = 3.0) -> Any:
    return await asyncio.wait_for(queue.get(), timeout)


# ------------------------------------------------------------------------------------------------ login & gateway


async def test_login_ready_and_guild_cached(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        assert bot.user is not None and bot.user.id == fake.bot_user_id
        assert bot.application_id == fake.application_id
        guild = bot.get_guild(world.guild.id)
        assert guild is not None and guild.name == "Test Guild"
        assert guild.me is not None and guild.me.guild_permissions.manage_threads
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel) and channel.name == "general"
        assert fake.last_intents == bot.intents.value
        assert fake.connected_sessions == 1
    assert [r.path for r in fake.requests[:2]] == ["/users/@me", "/oauth2/applications/@me"]


async def test_wrong_token_is_a_login_failure(fake: FakeDiscord, world: World) -> None:
    bot, _ = make_bot(world.guild.id)
    with pytest.raises(discord.LoginFailure):
        await bot.login("not-the-token")
    await bot.close()


async def test_second_bot_logs_in_after_first_closes(fake: FakeDiscord, world: World) -> None:
    first, first_probe = make_bot(world.guild.id)
    async with running(first, first_probe):
        pass
    second, probe = make_bot(world.guild.id)
    async with running(second, probe):
        assert fake.connected_sessions == 1
        await fake.send_user_message(world.alice, world.channel, "still there?")
        message = await next_item(probe.messages)
        assert message.content == "still there?"
    assert first_probe.messages.empty()
    assert len(fake.identify_payloads) == 2


@pytest.mark.parametrize("how", ["op7_reconnect", "server_close_4000"])
async def test_reconnect_resumes_session(fake: FakeDiscord, world: World, how: str) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        if how == "op7_reconnect":
            await fake.reconnect_clients()
        else:
            await fake.drop_gateway_connections(4000)
        # discord.py reconnects at once and sends RESUME (a failed resume would re-IDENTIFY after 5 s)
        await asyncio.wait_for(probe.resumed.wait(), 3)
        await fake.send_user_message(world.alice, world.channel, "after resume")
        assert (await next_item(probe.messages)).content == "after resume"
    assert len(fake.identify_payloads) == 1


# ------------------------------------------------------------------------------------------------ app commands


async def test_tree_sync_to_guild_stores_commands(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        synced = await bot.tree.sync(guild=discord.Object(world.guild.id))
    assert [c.name for c in synced] == ["subagents"]
    assert synced[0].default_member_permissions == MANAGE_THREADS
    stored = fake.synced_commands(world.guild)
    assert len(stored) == 1
    cmd = stored[0]
    assert cmd["default_member_permissions"] == str(MANAGE_THREADS.value)  # Discord echoes a string
    assert cmd["guild_id"] == str(world.guild.id) and cmd["application_id"] == str(fake.application_id)
    spawn = cmd["options"][0]
    assert (spawn["name"], spawn["type"]) == ("spawn", 1)
    assert [(o["name"], o["type"], o["required"]) for o in spawn["options"]] == [("agent", 3, True), ("task", 3, True)]
    assert spawn["options"][0]["autocomplete"] is True
    assert fake.synced_commands() == []


async def test_slash_command_defer_then_ephemeral_followup(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)

    async def handler(interaction: discord.Interaction, agent: str, task: str) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        await interaction.followup.send(f"spawned {agent}: {task}", ephemeral=True)

    probe.handler = handler
    async with running(bot, probe, sync_guild=world.guild.id):
        inter = await fake.slash(world.alice, world.channel, "subagents spawn", agent="main", task="do it")
        ack = await fake.wait_ack(inter, timeout=5)
        assert (ack.type, ack.status_code, ack.ephemeral) == (5, 200, True)
        assert ack.elapsed < fake.interaction_ack_deadline
        msg = await fake.wait_followup(inter, timeout=5)
    assert probe.calls == [("main", "do it")]
    assert msg["content"] == "spawned main: do it"
    assert msg["flags"] & 64
    assert [m["id"] for m in fake.interaction_messages(inter)] == [msg["id"]]  # the followup replaced "thinking"
    assert fake.channel_messages(world.channel) == []  # ephemeral: never a public channel message
    assert probe.errors.empty()


async def test_public_defer_then_edit_original(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)

    async def handler(interaction: discord.Interaction, agent: str, task: str) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.edit_original_response(content=f"working on {task}")

    probe.handler = handler
    async with running(bot, probe, sync_guild=world.guild.id):
        inter = await fake.slash(world.alice, world.channel, "subagents spawn", agent="main", task="it")
        msg = await fake.wait_followup(inter)
        await fake.wait_for_dispatch("MESSAGE_UPDATE", lambda d: d["id"] == msg["id"])
    assert [e.kind for e in inter.responses] == ["deferred", "original_edit"]
    assert msg["content"] == "working on it" and not msg["flags"] & (64 | 128)
    assert msg["interaction_metadata"]["name"] == "subagents spawn"
    assert [m["content"] for m in fake.channel_messages(world.channel)] == ["working on it"]


async def test_immediate_reply_and_expired_token(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    followup_error: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

    async def handler(interaction: discord.Interaction, agent: str, task: str) -> None:
        await interaction.response.send_message(f"on it, {interaction.user.name}")
        fake.advance_time(16 * 60)  # past the 15 minute interaction token lifetime
        try:
            await interaction.followup.send("too late")
        except discord.HTTPException as exc:
            followup_error.set_result(exc)

    probe.handler = handler
    async with running(bot, probe, sync_guild=world.guild.id):
        inter = await fake.slash(world.alice, world.channel, "subagents spawn", agent="main", task="x")
        reply = await fake.wait_reply(inter)
        error = await asyncio.wait_for(followup_error, 3)
    assert reply["content"] == "on it, alice" and inter.callbacks[0].type == 4
    assert isinstance(error, discord.HTTPException) and (error.status, error.code) == (401, 50027)


async def test_callback_after_deadline_gets_10062(fake: FakeDiscord, world: World) -> None:
    fake.interaction_ack_deadline = 0.2
    bot, probe = make_bot(world.guild.id)

    async def handler(interaction: discord.Interaction, agent: str, task: str) -> None:
        fake.advance_time(0.35)  # a slow handler, on the fake's clock
        await interaction.response.defer()

    probe.handler = handler
    async with running(bot, probe, sync_guild=world.guild.id):
        inter = await fake.slash(world.alice, world.channel, "subagents spawn", agent="main", task="slow")
        ack = await fake.wait_ack(inter, timeout=3)
        error = await next_item(probe.errors)
    assert (ack.status_code, ack.error_code) == (404, 10062)
    assert ack.elapsed > 0.2
    assert isinstance(error, discord.NotFound) and error.code == 10062


async def test_second_callback_gets_40060(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)

    async def handler(interaction: discord.Interaction, agent: str, task: str) -> None:
        await interaction.response.defer()
        # a fresh InteractionResponse bypasses discord.py's own "already responded" guard
        await discord.InteractionResponse(interaction).send_message("again")

    probe.handler = handler
    async with running(bot, probe, sync_guild=world.guild.id):
        inter = await fake.slash(world.alice, world.channel, "subagents spawn", agent="main", task="twice")
        error = await next_item(probe.errors)
    assert isinstance(error, discord.HTTPException) and error.code == 40060
    assert [(c.type, c.status_code, c.error_code) for c in inter.callbacks] == [(5, 200, None), (4, 400, 40060)]


async def test_unsynced_command_is_a_clear_error(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):  # no sync
        with pytest.raises(LookupError, match="was not synced"):
            await fake.slash(world.alice, world.channel, "subagents spawn", agent="main", task="x")


async def test_autocomplete_returns_choices(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe, sync_guild=world.guild.id):
        choices = await fake.autocomplete(world.alice, world.channel, "subagents spawn", focused="agent", agent="ma")
    assert [c["value"] for c in choices] == ["main", "mapper"]


async def test_click_button_updates_message(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        view = discord.ui.View(timeout=None)
        button: discord.ui.Button[discord.ui.View] = discord.ui.Button(label="Stop", custom_id="run:stop")

        async def on_click(interaction: discord.Interaction) -> None:
            await interaction.response.edit_message(content="stopped", view=None)

        button.callback = on_click  # type: ignore[method-assign]
        view.add_item(button)
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel)
        sent = await channel.send("running", view=view)
        inter = await fake.click_button(world.alice, sent.id, "run:stop")
        ack = await fake.wait_ack(inter)
        updated = await fake.wait_for_message(world.channel, lambda m: m["content"] == "stopped")
    assert (ack.type, ack.status_code) == (7, 200)
    assert updated["id"] == str(sent.id) and updated["components"] == []


# ------------------------------------------------------------------------------------------------ messages


async def test_send_with_same_nonce_twice_creates_one_message(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel)
        first = await channel.send("hello", nonce="n-1")
        second = await channel.send("hello", nonce="n-1")
    assert first.id == second.id
    assert [m["content"] for m in fake.channel_messages(world.channel)] == ["hello"]
    assert fake.requests_matching("POST", r"/messages$")[0].json["enforce_nonce"] is True


async def test_lost_answer_500_is_retried_and_deduped_by_nonce(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel)
        fake.inject_failure("POST", rf"^/channels/{world.channel.id}/messages$", 500, after_commit=True)
        sent = await channel.send("exactly once", nonce="n-2")  # discord.py sleeps 1 s, then retries
    stored = fake.channel_messages(world.channel)
    assert [m["content"] for m in stored] == ["exactly once"]
    assert sent.id == int(stored[0]["id"])
    assert [r.status for r in fake.requests_matching("POST", r"/messages$")] == [500, 200]


async def test_429_is_waited_out(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel)
        fake.inject_failure("POST", r"/messages$", 429, retry_after=0.2)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await channel.send("after the rate limit")
        waited = loop.time() - started
    assert waited >= 0.2
    assert [r.status for r in fake.requests_matching("POST", r"/messages$")] == [429, 200]
    assert len(fake.channel_messages(world.channel)) == 1


async def test_content_over_2000_chars_is_rejected(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel)
        with pytest.raises(discord.HTTPException) as excinfo:
            await channel.send("x" * 2001)
    assert (excinfo.value.status, excinfo.value.code) == (400, 50035)
    assert fake.channel_messages(world.channel) == []


async def test_send_file_records_attachment(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel)
        sent = await channel.send("report attached", file=discord.File(io.BytesIO(b"line 1\n"), filename="report.txt"))
        downloaded = await sent.attachments[0].read()
    assert fake.message_files(sent.id) == [("report.txt", b"line 1\n")]
    assert sent.attachments[0].filename == "report.txt" and sent.attachments[0].size == 7
    assert downloaded == b"line 1\n"


async def test_allowed_mentions_are_recorded_and_applied(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel)
        await channel.send(f"@everyone look, {world.alice.mention}", allowed_mentions=discord.AllowedMentions.none())
    msg = fake.channel_messages(world.channel)[0]
    assert msg["mention_everyone"] is False and msg["mentions"] == []
    assert fake.allowed_mentions_log[0]["allowed_mentions"]["parse"] == []


async def test_user_mention_reaches_on_message(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        await fake.send_user_message(world.alice, world.channel, f"hello {fake.bot.mention}", mention_bot=True)
        message = await next_item(probe.messages)
        assert bot.user in message.mentions
    assert message.content == f"hello <@{fake.bot_user_id}>"
    assert message.author.id == world.alice.id and isinstance(message.author, discord.Member)
    assert message.channel.id == world.channel.id


async def test_without_message_content_intent_only_mentions_have_content(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id, intents=discord.Intents.default())
    async with running(bot, probe):
        await fake.send_user_message(world.alice, world.channel, "chatter")
        await fake.send_user_message(world.alice, world.channel, "ping", mention_bot=True)
        chatter, ping = await next_item(probe.messages), await next_item(probe.messages)
    assert chatter.content == ""
    assert ping.content == "ping"


async def test_wait_helpers_time_out_with_a_description(fake: FakeDiscord, world: World) -> None:
    with pytest.raises(NeverHappened, match="no matching message in channel"):
        await fake.wait_for_message(world.channel, lambda m: False, timeout=0.05)


# ------------------------------------------------------------------------------------------------ threads/webhooks


async def test_thread_and_webhook_routes(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel)
        thread = await channel.create_thread(name="run-1", type=discord.ChannelType.public_thread)
        await fake.wait_for_dispatch("THREAD_CREATE")
        webhook = await channel.create_webhook(name="personas")
        sent = await webhook.send("hi from a persona", username="Researcher", thread=thread, wait=True)
        await thread.edit(archived=True)
        with pytest.raises(discord.HTTPException) as excinfo:
            await thread.edit(name="renamed")
        starter = await channel.send("run 2 starts here")
        from_message = await starter.create_thread(name="run-2")
    assert excinfo.value.code == 50083
    assert from_message.id == starter.id  # Discord reuses the starter message id
    assert {t.name for t in fake.threads(world.channel)} == {"run-1", "run-2"}
    stored = fake.channel_messages(thread.id)
    assert stored[0]["author"]["username"] == "Researcher" and stored[0]["webhook_id"] == str(webhook.id)
    assert sent.id == int(stored[0]["id"])
    assert fake.message_meta(sent.id).username == "Researcher"
    fake_thread = fake.get_channel(thread.id)
    assert fake_thread is not None and fake_thread.archived and fake_thread.parent_id == world.channel.id


async def test_unknown_route_is_404_and_listed(fake: FakeDiscord, world: World) -> None:
    bot, probe = make_bot(world.guild.id)
    async with running(bot, probe):
        with pytest.raises(discord.NotFound):
            await bot.http.request(discord.http.Route("GET", "/definitely/not/a/route"))
    assert fake.unhandled_requests == [("GET", "/api/v10/definitely/not/a/route")]
    fake.unhandled_requests.clear()
