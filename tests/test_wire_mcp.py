"""MCP tools seen from Discord: a member's sub-agent calls a tool of a configured MCP server and its result reaches
the channel; a server that dies mid-run fails the run with a reason that names it."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from bot.agents.mcp_servers import LISTING_SECONDS
from tests.harness import announcement_for
from tests.test_wire_control import command, member, spawn

SERVER = Path(__file__).parent / "fakes" / "mcp_server.py"


def with_mcp(world, calls: Path) -> None:
    """Agent researcher gets the test server as ``calc``; its calls go to ``calls``, its starts to ``starts.jsonl``
    beside it."""
    world.monkeypatch.setenv("TB_TEST_MCP_CALLS", str(calls))
    world.monkeypatch.setenv("TB_TEST_MCP_STARTS", str(calls.with_name("starts.jsonl")))
    world.extra_config = (  # the first line continues the base config's [agents.list.researcher]
        'mcp_servers = ["calc"]\n'
        f'[mcp.servers.calc]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
        'env_from = { MCP_CALLS_FILE = "TB_TEST_MCP_CALLS", MCP_STARTS_FILE = "TB_TEST_MCP_STARTS" }\n'
        "timeout_seconds = 10\n"
    )


def starts(calls: Path) -> int:
    """How many times the test server was started."""
    path = calls.with_name("starts.jsonl")
    return len(path.read_text().splitlines()) if path.exists() else 0


async def test_a_sub_agent_calls_an_mcp_tool_and_its_answer_reaches_the_channel(world, tmp_path):
    calls = tmp_path / "calls.jsonl"
    with_mcp(world, calls)
    world.llm.tool_call("calc__add", {"a": 2, "b": 3})
    world.llm.reply("The sum is 5.")
    await world.start_bot()

    run_id = await spawn(world, task="Add 2 and 3")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "✅ Subagent **researcher**" in announcement["content"]
    assert "The sum is 5." in announcement["content"]
    offered = {tool["function"]["name"] for tool in world.llm.requests[0]["body"]["tools"]}
    assert {"calc__add", "calc__shout", "calc__die"} <= offered
    assert world.llm.requests[1]["messages"][-1]["content"] == "5"
    assert [json.loads(line) for line in calls.read_text().splitlines()] == [
        {"tool": "add", "arguments": {"a": 2, "b": 3}}
    ]


async def test_an_mcp_server_that_dies_mid_run_fails_it_with_a_reason(world, tmp_path):
    with_mcp(world, tmp_path / "calls.jsonl")
    world.llm.tool_call("calc__die", {})
    await world.start_bot()

    run_id = await spawn(world, task="Use the server")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "❌ Subagent **researcher**" in announcement["content"]
    assert "failed: MCP server 'calc' is unavailable: Connection closed" in announcement["content"]
    assert world.rows("SELECT status FROM runs") == [("failed",)]


async def test_tools_lists_what_an_agent_may_call_in_each_place_and_why_not_the_rest(world, tmp_path):
    with_mcp(world, tmp_path / "calls.jsonl")
    world.extra_config += (
        '[mcp.servers.gone]\ncommand = "/nonexistent/mcp-server"\n'
        '[risk_profiles.careful]\nexcluded_tools = ["calc__die", "sessions_history"]\n'
        "[agents.defaults.subagents]\nmax_spawn_depth = 2\n"
    )
    world.extra_config = world.extra_config.replace(
        'mcp_servers = ["calc"]\n', 'mcp_servers = ["calc", "gone"]\nrisk_profile = "careful"\n', 1
    )
    await world.start_bot()

    report = await command(world, world.alice, "subagents tools", agent="researcher")
    assert report.splitlines() == [
        "🧰 Tools of **researcher** (risk profile: careful · runtime profile: none)",
        "MCP servers: calc — 4 tool(s); gone — unavailable: [Errno 2] No such file or directory: "
        "'/nonexistent/mcp-server'",
        "**As a conversation's main agent:** agents_list, delegate, model_switch, sessions_list, sessions_send, "
        "sessions_spawn, spawn_subagent, subagents, calc__add, calc__env, calc__shout, attach_file",
        "-# not offered — excluded by risk profile 'careful': sessions_history, calc__die",
        "**As a sub-agent at depth 1 (orchestrator):** delegate, sessions_list, sessions_spawn, spawn_subagent, "
        "subagents, calc__add, calc__env, calc__shout, attach_file",
        "-# not offered — main agent only: agents_list, model_switch, sessions_send; excluded by risk profile "
        "'careful': sessions_history, calc__die",
        "**As a sub-agent at depth 2 (leaf):** calc__add, calc__env, calc__shout, attach_file",
        "-# not offered — a leaf sub-agent gets no session tools: agents_list, delegate, model_switch, "
        "sessions_history, sessions_list, sessions_send, sessions_spawn, spawn_subagent, subagents; excluded by "
        "risk profile 'careful': calc__die",
    ]
    plain = await command(world, world.alice, "subagents tools", agent="main")
    assert plain.splitlines()[:3] == [
        "🧰 Tools of **main** (risk profile: none · runtime profile: none)",
        "**As a conversation's main agent:** agents_list, model_switch, sessions_history, sessions_list, "
        "sessions_send, sessions_spawn, spawn_subagent, subagents, attach_file",
        "-# not offered — needs a risk_profile and another agent to delegate to: delegate",
    ]
    refused = await command(world, world.alice, "subagents tools", agent="ghost")
    assert refused == '⚠️ Unknown agent "ghost". Configured agents: main, researcher.'


class MovableClock:
    """Real time, moved forward by the test."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


async def test_tools_starts_each_server_once_per_listing_period_however_often_it_is_asked(world, tmp_path):
    calls = tmp_path / "calls.jsonl"
    with_mcp(world, calls)
    world.clock = clock = MovableClock()
    bob = member(world, "bob")
    await world.start_bot()
    assert starts(calls) == 0

    together = await asyncio.gather(
        *(command(world, user, "subagents tools", agent="researcher") for user in [world.alice, bob] * 3)
    )
    listing = "MCP servers: calc — 4 tool(s)"
    assert all(answer == together[0] for answer in together) and listing in together[0].splitlines()
    assert starts(calls) == 1  # six callers at once share one listing

    again = await command(world, bob, "subagents tools", agent="researcher")
    assert again == together[0]
    assert starts(calls) == 1  # kept

    clock.ahead += LISTING_SECONDS - 1
    assert await command(world, world.alice, "subagents tools", agent="researcher") == together[0]
    assert starts(calls) == 1
    clock.ahead += 1  # the listing period has passed: asked again
    after = await asyncio.gather(*(command(world, world.alice, "subagents tools", agent="researcher") for _ in "abc"))
    assert after == [together[0]] * 3
    assert starts(calls) == 2
    assert not calls.exists()  # listing calls no tool


async def test_an_operators_read_only_tools_win_over_the_servers_hints(world, tmp_path):
    calls = tmp_path / "calls.jsonl"
    with_mcp(world, calls)  # the server hints that add only reads, and says nothing of shout
    world.extra_config += 'read_only_tools = ["shout"]\n[risk_profiles.ro]\nlevel = "readonly"\n'
    world.extra_config = 'risk_profile = "ro"\n' + world.extra_config
    world.llm.tool_call("calc__add", {"a": 2, "b": 3})
    world.llm.tool_call("calc__shout", {"text": "hi"})
    world.llm.reply("Shouted, could not add.")
    await world.start_bot()

    run_id = await spawn(world, task="Add, then shout")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "Shouted, could not add." in announcement["content"]
    assert world.llm.requests[1]["messages"][-1]["content"] == (
        "Security policy: read-only mode, cannot perform 'calc__add'"
    )
    assert world.llm.requests[2]["messages"][-1]["content"] == "HEY HI"
    assert [json.loads(line) for line in calls.read_text().splitlines()] == [
        {"tool": "shout", "arguments": {"text": "hi"}}
    ]
