"""Every log line of a run carries who and where it is: ``run_id``, ``session_key``, ``agent_id`` /
``agent_alias``, ``depth``, and for a sub-agent its ``spawn_site`` (``slash``, ``tool`` or ``delegate``)."""

from __future__ import annotations

import structlog
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from structlog.testing import capture_logs

from bot.core.runs.requests import SpawnRequest
from tests.core_support import ORIGIN, ScriptedModels, chat_and_wait, running_core, settle, text

CONFIG = """
[agents.defaults]
model = "test/main"
[agents.defaults.subagents]
allow_agents = ["*"]
[agents.list.main]
[agents.list.worker]
model = "test/worker"
"""


def _finished_lines(logs: list[dict]) -> dict[str, dict]:
    return {line["run_id"]: line for line in logs if line["event"] == "run_finished"}


async def test_a_slash_spawn_and_a_tool_spawn_log_their_spawn_site(tmp_path):
    def main(messages, info):
        if any(p.part_kind == "tool-return" for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("ok")])
        return ModelResponse(parts=[ToolCallPart("sessions_spawn", {"task": "by tool", "agentId": "worker"})])

    with capture_logs(processors=[structlog.contextvars.merge_contextvars]) as logs:
        async with running_core(tmp_path, ScriptedModels(main=main, worker=text("done")), CONFIG) as core:
            by_slash = await core.spawn(SpawnRequest(agent_id="worker", task="by slash", origin=ORIGIN))
            chat_id = await chat_and_wait(core)

            async def both_done():
                return len(_finished_lines(logs)) == 3

            await settle(core, both_done)
            by_tool = next(
                row.run
                for row in await core.core.queries.children("agent:main:discord:channel:100")
                if row.run.task == "by tool"
            )

    finished = _finished_lines(logs)
    slash, tool, chat = finished[by_slash.run_id], finished[by_tool.id], finished[chat_id]
    assert (slash["spawn_site"], slash["agent_alias"], slash["depth"]) == ("slash", "worker", 1)
    assert slash["session_key"] == by_slash.session_key
    assert (tool["spawn_site"], tool["agent_alias"], tool["depth"]) == ("tool", "worker", 1)
    assert (chat["agent_alias"], chat["depth"], "spawn_site" in chat) == ("main", 0, False)


async def test_a_delegated_run_logs_its_spawn_site_and_alias(tmp_path):
    config = (
        CONFIG.replace("[agents.list.main]\n", '[agents.list.main]\nrisk_profile = "team"\n').replace(
            '[agents.list.worker]\nmodel = "test/worker"\n',
            '[agents.list.worker]\nmodel = "test/worker"\nrisk_profile = "team"\n',
        )
        + '[risk_profiles.team]\ndelegation_policy = { mode = "allow" }\n'
    )

    def main(messages, info):
        if any(p.part_kind == "tool-return" for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("ok")])
        return ModelResponse(parts=[ToolCallPart("delegate", {"agent": "worker", "prompt": "by delegate"})])

    with capture_logs(processors=[structlog.contextvars.merge_contextvars]) as logs:
        async with running_core(tmp_path, ScriptedModels(main=main, worker=text("done")), config) as core:
            await chat_and_wait(core)
    [delegated] = [line for line in logs if line["event"] == "run_finished" and line.get("agent_alias") == "worker"]
    assert (delegated["spawn_site"], delegated["depth"]) == ("delegate", 1)
    assert delegated["session_key"].startswith("agent:worker:subagent:")
