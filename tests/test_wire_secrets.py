"""No configured secret reaches a channel, the store or the logs: a provider that echoes the API key in an error
(a proxy answering 400, 403, 404 or 422), an MCP tool result holding a server's ``env_from`` secret, and log fields
that nest it in dicts and lists all read ``[REDACTED]`` where people or operators see them."""

from __future__ import annotations

import base64
import json
import logging
import sys

import pytest
import structlog
from pydantic_ai.messages import ToolReturn

from bot.logging_setup import configure_logging
from bot.redaction import Redactor
from tests import stores
from tests.fakes.openai_server import Step
from tests.harness import API_KEY, BOT_TOKEN, announcement_for, answer_to
from tests.test_wire_control import command, spawn
from tests.test_wire_mcp import SERVER

ECHO = "Incorrect API key provided: {api_key}. Check your proxy settings."  # the fake fills in the key it got
ECHOED = "Incorrect API key provided: [REDACTED]. Check your proxy settings."
MCP_SECRET = "mcp-secret-token-0042"


def everything_posted(world) -> str:
    """Everything the bot sent Discord: every request's body and files (posts, edits, interaction answers)."""
    sent = world.discord.requests_matching("*", "")
    return repr([(request.path, request.json, request.files) for request in sent])


def everything_stored(world) -> str:
    """Every row of every table of the bot's database."""
    tables = (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        if stores.POSTGRESQL
        else "SELECT name FROM sqlite_master WHERE type = 'table'"
    )
    stored = "\n".join(repr(world.rows(f"SELECT * FROM {name}")) for (name,) in world.rows(tables))
    return stored + "\n" + journaled(world)


def journaled(world) -> str:
    """What durable runs' journal (DBOS's system database) recorded of each step: its result or the error it
    raised, decoded (DBOS stores them pickled, in base64)."""
    if stores.POSTGRESQL:
        rows = world.rows("SELECT output, error FROM dbos.operation_outputs")
    else:
        rows = stores.query(world.tmp_path / "threadbound.sqlite3.dbos", "SELECT output, error FROM operation_outputs")
    recorded = [base64.b64decode(value) for row in rows for value in row if value]
    assert recorded, "durable runs journal their steps"
    return repr(recorded)


@pytest.mark.parametrize("status", [400, 403, 404, 422])
async def test_a_provider_error_that_echoes_the_key_is_redacted_wherever_it_goes(world, status):
    world.llm.error(status, ECHO)
    await world.start_bot()

    run_id = await spawn(world, task="Scout the area")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    assert world.llm.requests[0]["headers"]["authorization"] == f"Bearer {API_KEY}"  # the key the proxy echoed
    reason = f"model provider answered HTTP {status}: {ECHOED}"
    assert f"failed: {reason}" in announcement["content"]
    await world.quiescent()
    assert world.rows("SELECT status, error FROM runs") == [("failed", reason)]
    info = await command(world, world.alice, "subagents info", target="1")
    assert reason in info
    log = await command(world, world.alice, "subagents log", target="1", tools=True)
    for seen in (everything_posted(world), everything_stored(world), info, log):
        assert API_KEY not in seen


def lead_and_failing_researcher(body: dict) -> Step | str:
    """The main agent spawns a researcher; the researcher's requests are refused with the key echoed."""
    messages = body["messages"]
    if "You research things." in messages[0]["content"]:
        return Step.error(403, ECHO)
    if messages[-1]["role"] == "tool":
        return "The researcher is on it."
    if "[Internal task completion event]" in str(messages[-1]["content"]):  # the main agent tells what happened
        [status] = [line for line in messages[-1]["content"].splitlines() if line.startswith("status: ")]
        return "The researcher " + status.removeprefix("status: ")
    if "how did it go" in str(messages[-1]["content"]):
        return "It failed."
    return Step.calls([("sessions_spawn", {"agentId": "researcher", "task": "Dig up the numbers"})])


async def test_a_failed_child_tells_its_main_agent_without_the_key(world):
    world.extra_config = '[agents.defaults.subagents]\nallow_agents = ["*"]\n'
    world.llm.default = lead_and_failing_researcher
    await world.start_bot()
    bot_id = world.discord.bot_user_id

    first = await world.discord.send_user_message(world.alice, world.channel, f"<@{bot_id}> find the numbers")
    assert (await world.discord.wait_for_message(world.channel, answer_to(first)))["content"] == (
        "The researcher is on it."
    )
    failed = await world.discord.wait_for_message(world.channel, lambda m: "The researcher failed" in m["content"])
    assert f"HTTP 403: {ECHOED}" in failed["content"]
    await world.quiescent()
    second = await world.discord.send_user_message(world.alice, world.channel, f"<@{bot_id}> how did it go?")
    assert (await world.discord.wait_for_message(world.channel, answer_to(second)))["content"] == "It failed."

    told = json.dumps(world.llm.requests[-1]["messages"])  # the main agent's context: the completion event
    assert "[Internal task completion event]" in told and f"HTTP 403: {ECHOED}" in told
    assert API_KEY not in told
    assert API_KEY not in everything_posted(world) and API_KEY not in everything_stored(world)


def with_secret_mcp(world, tmp_path) -> None:
    """A sub-agent with an MCP server that holds a secret in its environment (``env_from``)."""
    world.monkeypatch.setenv("TB_TEST_MCP_CALLS", str(tmp_path / "calls.jsonl"))
    world.monkeypatch.setenv("TB_TEST_MCP_TOKEN", MCP_SECRET)
    world.extra_config = (  # the first line continues the base config's [agents.list.researcher]
        'mcp_servers = ["calc"]\n'
        f'[mcp.servers.calc]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
        'env_from = { MCP_CALLS_FILE = "TB_TEST_MCP_CALLS", SERVICE_TOKEN = "TB_TEST_MCP_TOKEN" }\n'
        "timeout_seconds = 10\n"
    )


async def test_a_tool_result_holding_an_mcp_secret_is_redacted_for_the_model_the_log_and_the_channel(world, tmp_path):
    with_secret_mcp(world, tmp_path)
    world.llm.tool_call("calc__env", {"name": "SERVICE_TOKEN"})
    world.llm.reply("Done.")
    await world.start_bot()

    run_id = await spawn(world, task="Read the service token")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    assert "✅ Subagent **researcher**" in announcement["content"]
    assert world.llm.requests[1]["messages"][-1]["content"] == "[REDACTED]"  # what the tool said, as the model read it
    log = await command(world, world.alice, "subagents log", target="1", tools=True)
    assert "[REDACTED]" in log
    for seen in (everything_posted(world), everything_stored(world), log, json.dumps(world.llm.requests)):
        assert MCP_SECRET not in seen


async def test_a_tool_result_that_is_the_runs_result_is_announced_redacted(world, tmp_path):
    with_secret_mcp(world, tmp_path)
    world.llm.tool_call("calc__env", {"name": "SERVICE_TOKEN"})
    world.llm.reply("")  # nothing to add: the last tool result is the run's result
    await world.start_bot()

    run_id = await spawn(world, task="Read the service token")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    assert "[REDACTED]" in announcement["content"] and MCP_SECRET not in announcement["content"]
    assert world.rows("SELECT result_text FROM runs") == [("[REDACTED]",)]


async def test_logs_redact_every_secret_in_nested_values_over_a_failed_run(world, capsys):
    world.monkeypatch.setenv("TB_TEST_MCP_TOKEN", MCP_SECRET)
    world.extra_config = (  # a server no agent uses (a stdio server's output would need a real stderr here)
        '[mcp.servers.idle]\ncommand = "/nonexistent/mcp-server"\nenv_from = { SERVICE_TOKEN = "TB_TEST_MCP_TOKEN" }\n'
    )
    before = structlog.get_config()  # the tests' own configuration (conftest.py), put back afterwards
    configure_logging("info", "json", Redactor.of(world.config()))
    # the bot's module loggers are first used in this test: cached, they would keep this configuration after it
    structlog.configure(cache_logger_on_first_use=False)
    try:
        world.llm.error(403, ECHO)
        await world.start_bot()
        run_id = await spawn(world, task="Scout the area")
        await world.discord.wait_for_message(world.channel, announcement_for(run_id))
        await world.quiescent()
        structlog.get_logger("bot.test").info(
            "nested", payload={"headers": [f"Bearer {API_KEY}"], "inner": {"token": (BOT_TOKEN, MCP_SECRET)}}
        )
    finally:
        for bot in list(world.bots):
            await world.stop_bot(bot)
        logging.getLogger().handlers.clear()
        structlog.configure(**before)

    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    finished = [line for line in lines if line["event"] == "run_finished"]
    assert finished and finished[0]["error"] == f"model provider answered HTTP 403: {ECHOED}"
    nested = [line for line in lines if line["event"] == "nested"]
    assert nested[0]["payload"] == {"headers": ["Bearer [REDACTED]"], "inner": {"token": ["[REDACTED]", "[REDACTED]"]}}
    for secret in (API_KEY, BOT_TOKEN, MCP_SECRET):
        assert secret not in json.dumps(lines)


def test_the_redaction_keeps_short_values_and_replaces_a_longer_secret_whole():
    redact = Redactor(["abc12", "sk-live-123456", "sk-live-123456-extra"])
    assert redact.text("abc12 sk-live-123456-extra sk-live-123456") == "abc12 [REDACTED] [REDACTED]"
    assert redact.value({"sk-live-123456": ("x", ["sk-live-123456"])}) == {"[REDACTED]": ("x", ["[REDACTED]"])}


def test_a_tool_return_with_content_for_the_model_is_redacted_in_both_parts():
    """An MCP app tool answers with a ToolReturn: its return value and the content beside it are redacted alike."""
    redact = Redactor(["sk-live-123456"])
    shown = redact.value(ToolReturn(return_value={"token": "sk-live-123456"}, content=["see sk-live-123456"]))
    assert shown == ToolReturn(return_value={"token": "[REDACTED]"}, content=["see [REDACTED]"])
