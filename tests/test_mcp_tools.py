"""MCP servers as tool sources, through the real core and runner (FunctionModel) and a real MCP server written with
the official SDK (``tests/fakes/mcp_server.py``, over stdio and Streamable HTTP): an agent calls ``<server>__<tool>``,
the policy decides which tools it is offered, and a server that cannot start or dies mid-run fails the run with a
clear reason."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from bot.agents.mcp_servers import McpServers, McpUnavailable
from bot.config import McpServerConfig
from bot.records import RunStatus
from tests.core_support import ScriptedModels, chat_and_wait, first_prompt, running_core, tool_returns
from tests.polling import eventually

SERVER = Path(__file__).parent / "fakes" / "mcp_server.py"
MCP = f"""
[agents.defaults]
model = "test/main"
[mcp.servers.calc]
command = "{sys.executable}"
args = ["{SERVER}"]
env_from = {{ GREETING = "TB_TEST_GREETING", MCP_CALLS_FILE = "TB_TEST_MCP_CALLS" }}
timeout_seconds = 10
"""
CONFIG = MCP + '[agents.list.main]\nmcp_servers = ["calc"]\n'


def recorded(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class ToolUser:
    """A model that makes the given tool calls one after another, recording each result as the model read it."""

    def __init__(self, *calls: tuple[str, dict]) -> None:
        self.calls = list(calls)
        self.results: list[str] = []
        self.tools: list[str] = []

    def __call__(self, messages, info) -> ModelResponse:
        self.tools = sorted(tool.name for tool in info.function_tools)
        self.results += [part.model_response_str() for part in tool_returns(messages)]
        if len(self.results) < len(self.calls):
            return ModelResponse(parts=[ToolCallPart(*self.calls[len(self.results)])])
        return ModelResponse(parts=[TextPart("done")])


async def test_an_agent_calls_a_servers_tools_and_the_server_sees_only_what_env_from_names(tmp_path, calls):
    user = ToolUser(
        ("calc__add", {"a": 2, "b": 3}), ("calc__shout", {"text": "hi"}), ("calc__env", {"name": "TB_SECRET_TOKEN"})
    )
    async with running_core(tmp_path, ScriptedModels(main=user), CONFIG) as core:
        run = await core.runs.get(await chat_and_wait(core))
    assert run.status is RunStatus.COMPLETED
    assert {"calc__add", "calc__shout", "calc__env", "calc__die"} <= set(user.tools)
    assert user.results == ["5", "YO HI", "(unset)"]
    assert recorded(calls) == [
        {"tool": "add", "arguments": {"a": 2, "b": 3}},
        {"tool": "shout", "arguments": {"text": "hi"}},
        {"tool": "env", "arguments": {"name": "TB_SECRET_TOKEN"}},
    ]


@pytest.mark.parametrize(
    ("profile", "offered", "withheld"),
    [
        ('allowed_tools = ["sessions_list"]\n', {"calc__add", "calc__die", "sessions_list"}, {"sessions_spawn"}),
        ('excluded_tools = ["calc__die"]\n', {"calc__add"}, {"calc__die"}),
    ],
)
async def test_the_risk_profile_admits_mcp_tools_unless_it_excludes_them(tmp_path, calls, profile, offered, withheld):
    config = CONFIG.replace("[agents.list.main]\n", '[agents.list.main]\nrisk_profile = "p"\n') + (
        "[risk_profiles.p]\n" + profile
    )
    user = ToolUser()
    async with running_core(tmp_path, ScriptedModels(main=user), config) as core:
        await chat_and_wait(core)
    assert offered <= set(user.tools) and not withheld & set(user.tools)


async def test_an_agent_that_lists_no_server_gets_none_of_its_tools(tmp_path, calls):
    user = ToolUser()
    async with running_core(tmp_path, ScriptedModels(main=user), MCP + "[agents.list.main]\n") as core:
        await chat_and_wait(core)
    assert not any("__" in tool for tool in user.tools)


async def test_a_server_that_dies_mid_run_fails_the_run_naming_it(tmp_path, calls):
    user = ToolUser(("calc__add", {"a": 1, "b": 1}), ("calc__die", {}))
    async with running_core(tmp_path, ScriptedModels(main=user), CONFIG) as core:
        run = await core.runs.get(await chat_and_wait(core))
    assert (run.status, run.error) == (RunStatus.FAILED, "MCP server 'calc' is unavailable: Connection closed")
    assert user.results == ["2"]
    assert [call["tool"] for call in recorded(calls)] == ["add", "die"]


async def test_a_server_that_cannot_start_fails_the_run_naming_it(tmp_path, calls):
    config = CONFIG.replace(f'command = "{sys.executable}"', 'command = "/nonexistent/mcp-server"')
    user = ToolUser(("calc__add", {"a": 1, "b": 1}))
    async with running_core(tmp_path, ScriptedModels(main=user), config) as core:
        run = await core.runs.get(await chat_and_wait(core))
    assert run.status is RunStatus.FAILED
    assert (
        run.error == "MCP server 'calc' is unavailable: [Errno 2] No such file or directory: '/nonexistent/mcp-server'"
    )


@pytest.fixture
async def http_server(calls):
    """The same server over Streamable HTTP on a free loopback port; its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "MCP_CALLS_FILE": str(calls)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SERVER), "--http", str(port), env=env, stderr=asyncio.subprocess.DEVNULL
    )

    def listening() -> bool:
        with socket.socket() as client:
            return client.connect_ex(("127.0.0.1", port)) == 0

    try:
        await eventually(listening, timeout=15, describe="the MCP server to listen")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        await process.wait()


async def test_a_streamable_http_server_serves_its_tools_too(tmp_path, calls, http_server):
    config = (
        f'[agents.defaults]\nmodel = "test/main"\n[mcp.servers.remote]\nurl = "{http_server}"\n'
        '[agents.list.main]\nmcp_servers = ["remote"]\n'
    )
    user = ToolUser(("remote__add", {"a": 20, "b": 22}))
    async with running_core(tmp_path, ScriptedModels(main=user), config) as core:
        run = await core.runs.get(await chat_and_wait(core))
    assert (run.status, user.results) == (RunStatus.COMPLETED, ["42"])
    assert recorded(calls) == [{"tool": "add", "arguments": {"a": 20, "b": 22}}]


async def test_a_bounded_delegate_gets_only_mcp_tools_its_caller_has_and_an_independent_one_its_own(tmp_path, calls):
    config = MCP + (
        '[risk_profiles.team]\ndelegation_policy = { mode = "allow" }\nexcluded_tools = ["calc__die"]\n'
        "[risk_profiles.wide]\n[runtime_profiles.agentic]\nagentic = true\n"
        '[agents.list.main]\nrisk_profile = "team"\nmcp_servers = ["calc"]\n'
        'delegates = [{ agent = "analyst", mode = "bounded" }, { agent = "solo", mode = "independent" }]\n'
        '[agents.list.analyst]\nmodel = "test/analyst"\nrisk_profile = "wide"\nruntime_profile = "agentic"\n'
        'mcp_servers = ["calc"]\n'
        '[agents.list.solo]\nmodel = "test/solo"\nrisk_profile = "wide"\nruntime_profile = "agentic"\n'
        'mcp_servers = ["calc"]\n'
    )
    main = ToolUser(("delegate", {"agent": "analyst", "prompt": "a"}), ("delegate", {"agent": "solo", "prompt": "b"}))
    analyst, solo = ToolUser(), ToolUser()
    async with running_core(tmp_path, ScriptedModels(main=main, analyst=analyst, solo=solo), config) as core:
        await chat_and_wait(core)
    assert "calc__die" not in main.tools and "calc__add" in main.tools
    assert {"calc__add", "calc__shout", "calc__env"} <= set(analyst.tools) and "calc__die" not in analyst.tools
    assert "calc__die" in solo.tools


async def test_a_spawn_subagent_child_has_its_agents_mcp_tools(tmp_path, calls):
    seen: list[list[str]] = []

    def model(messages, info):
        if first_prompt(messages).startswith("child:"):
            seen.append(sorted(tool.name for tool in info.function_tools))
            return ModelResponse(parts=[TextPart("child done")])
        if tool_returns(messages):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("spawn_subagent", {"prompt": "child: add"})])

    async with running_core(tmp_path, ScriptedModels(main=model), CONFIG) as core:
        await chat_and_wait(core)
    assert seen and {"calc__add", "spawn_subagent"} <= set(seen[0])


def _calc_servers(timeout: float = 10) -> McpServers:
    return McpServers({"calc": McpServerConfig(command=sys.executable, args=[str(SERVER)], timeout_seconds=timeout)})


async def _call(
    servers: McpServers, call: tuple[str, dict], *, hold: tuple[asyncio.Event, asyncio.Event] | None = None
) -> str:
    """One run of an agent that makes ``call``: the tool's answer, or the failure. With ``hold`` (connected,
    release), its run sets ``connected`` once it holds the server's connection, and calls when ``release`` is set."""

    async def model(messages, info) -> ModelResponse:
        if len(messages) == 1:
            if hold:
                hold[0].set()
                await hold[1].wait()
            return ModelResponse(parts=[ToolCallPart(*call)])
        return ModelResponse(parts=[TextPart(tool_returns(messages)[-1].model_response_str())])

    try:
        return (await Agent(FunctionModel(model), toolsets=[servers.toolset("calc")]).run("go")).output
    except McpUnavailable as unavailable:
        return str(unavailable)


async def test_a_server_that_died_is_started_again_for_the_next_run_while_another_run_still_holds_it(calls):
    servers = _calc_servers()
    connected, release = asyncio.Event(), asyncio.Event()
    holder = asyncio.create_task(_call(servers, ("calc__add", {"a": 1, "b": 1}), hold=(connected, release)))
    await asyncio.wait_for(connected.wait(), 30)
    assert await _call(servers, ("calc__die", {})) == "MCP server 'calc' is unavailable: Connection closed"
    assert await _call(servers, ("calc__add", {"a": 2, "b": 2})) == "4"  # not the dead connection
    release.set()
    assert await holder == "MCP server 'calc' is unavailable: Connection closed"  # it held the dead one


def _server_processes() -> list[str]:
    found = subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", str(SERVER)], capture_output=True, text=True)
    return found.stdout.split()


async def test_a_stdio_server_is_stopped_when_the_last_run_using_it_ends(calls):
    servers = _calc_servers()
    assert await _call(servers, ("calc__add", {"a": 1, "b": 2})) == "3"
    await eventually(lambda: not _server_processes(), timeout=10, describe="the server's process to end")
