"""Two processes on one store each run an approval board and a status board over every row, yet each approval
request and each run's status message is posted once — by the process that owns the run — and a change settled in
the other process still edits it.

Each "process" is a core under its own executor id with its own database connections, and its boards on its own
discord.py client logged in over REST to the fake Discord. Discord's nonce window is closed (``nonce_window = 0``),
so nothing but the boards keeps a request from being posted twice; both boards do a round at once, as two processes
woken together would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import discord
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from bot.core.orchestrator import Orchestrator
from bot.core.runs.requests import ChatRequest, SpawnRequest
from bot.discord_adapter.approval_board import ApprovalBoard
from bot.discord_adapter.approval_buttons import ApprovalButtons
from bot.discord_adapter.run_buttons import RunButtons
from bot.discord_adapter.status_board import StatusBoard
from bot.records import Actor, Origin, RunStatus
from storage.repositories import Repositories
from storage.status_messages import StatusMessageRepository
from tests.core_support import Gate, ScriptedModels, running_core, settle, tool_returns
from tests.db_views import approval_requests
from tests.test_deadlines_once import rest_client
from tests.test_wire_status import buttons

CONFIG = """
[agents.defaults]
model = "test/main"
approval_timeout_minutes = 30
[agents.list.main]
risk_profile = "careful"
[risk_profiles.careful]
always_ask = ["sessions_list"]
[durability]
executor_id = "{executor}"
"""


@dataclass(frozen=True)
class Process:
    executor_id: str
    core: Orchestrator
    client: discord.Client

    @property
    def repos(self) -> Repositories:
        return Repositories.over(self.core._db)


async def nobody_clicks(interaction: discord.Interaction) -> Actor:
    raise AssertionError("no button is clicked in these tests")


def asks_once(messages, info) -> ModelResponse:
    """Calls ``sessions_list`` (which waits for approval), then answers."""
    if tool_returns(messages):
        return ModelResponse(parts=[TextPart("listed")])
    return ModelResponse(parts=[ToolCallPart("sessions_list", {})])


@contextlib.asynccontextmanager
async def two_processes(fake_discord, tmp_path, models: ScriptedModels) -> AsyncIterator[list[Process]]:
    """Processes ``a`` and ``b`` on one store, each a core and a discord.py client of the fake Discord."""
    async with (
        rest_client(fake_discord) as client_a,
        rest_client(fake_discord) as client_b,
        running_core(tmp_path, models, CONFIG.format(executor="a")) as a,
        running_core(tmp_path, models, CONFIG.format(executor="b")) as b,
    ):
        yield [Process("a", a, client_a), Process("b", b, client_b)]


def origin_in(guild, channel) -> Origin:
    return Origin(
        user_id=7, channel_id=channel.id, conversation=f"discord:channel:{channel.id}", guild_id=guild.id, message_id=1
    )


async def test_an_approval_request_is_posted_once_by_its_runs_process_and_a_decision_elsewhere_edits_it(
    fake_discord, tmp_path
):
    fake_discord.nonce_window = 0
    guild = fake_discord.add_guild("Shared Guild")
    channel = fake_discord.add_text_channel(guild, "general")
    async with two_processes(fake_discord, tmp_path, ScriptedModels(main=asks_once)) as processes:
        a, b = (process.core for process in processes)
        boards = [
            ApprovalBoard(
                p.client,
                p.repos,
                30,
                p.executor_id,
                controls=ApprovalButtons(p.core.decide_approval, nobody_clicks).controls,
            )
            for p in processes
        ]
        run_id = await a.chat(ChatRequest(text="list them", origin=origin_in(guild, channel)))

        async def paused() -> bool:
            return (await a.runs.get(run_id)).status is RunStatus.AWAITING_APPROVAL

        await settle(a, paused)
        await asyncio.gather(*(board._show_unshown() for board in boards))
        posted = [(message["id"], buttons(message)) for message in fake_discord.channel_messages(channel)]
        [(approval_id, _)] = await approval_requests(a)
        assert await b.decide_approval(Actor(7, False, guild.id), approval_id, approve=True, where=(channel.id,))
        await asyncio.gather(*(board._show_unshown() for board in boards))
        shown = [(m["id"], m["content"], buttons(m)) for m in fake_discord.channel_messages(channel)]

    message_id = posted[0][0]
    assert posted == [(message_id, [f"approval:approve:{approval_id}", f"approval:deny:{approval_id}"])]
    assert shown == [(message_id, f"✅ `sessions_list` (run {run_id[:8]}) approved by <@7>.", [])]


async def test_a_runs_status_message_is_posted_once_by_its_process_and_finalised_by_either(fake_discord, tmp_path):
    guild = fake_discord.add_guild("Shared Guild")
    channel = fake_discord.add_text_channel(guild, "general")
    gate = Gate("found it")
    async with two_processes(fake_discord, tmp_path, ScriptedModels(main=gate)) as processes:
        a = processes[0].core
        boards = [
            StatusBoard(
                p.client,
                p.repos,
                StatusMessageRepository(p.core._db),
                p.executor_id,
                controls=RunButtons(p.core.people().control, nobody_clicks).controls,
                interval=0,
            )
            for p in processes
        ]
        accepted = await a.spawn(SpawnRequest(agent_id="main", task="find it", origin=origin_in(guild, channel)))
        await asyncio.wait_for(gate.entered.wait(), 10)
        for board in boards:  # both processes are told the run changed (B, say, settled something of it)
            board.run_changed(accepted.run_id)
        await asyncio.gather(*(board._refresh_dirty() for board in boards))
        posted = [(message["id"], buttons(message)) for message in fake_discord.channel_messages(channel)]
        gate.opened.set()

        async def ended() -> bool:
            return (await a.runs.get(accepted.run_id)).status.is_terminal

        await settle(a, ended)
        boards[1].run_changed(accepted.run_id)
        await boards[1]._refresh_dirty()
        statuses = [m for m in fake_discord.channel_messages(channel) if "-# run" in m["content"]]

    assert posted == [(statuses[0]["id"], [f"run:kill:{accepted.run_id}", f"run:steer:{accepted.run_id}"])]
    assert len(statuses) == 1
    assert "completed" in statuses[0]["content"] and buttons(statuses[0]) == []
