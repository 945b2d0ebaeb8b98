"""ACP harness sessions seen from Discord: a sub-agent run by a coding agent over the Agent Client Protocol (the
fake in ``tests/fakes/acp_agent.py``, started over stdio). Its final message is announced as any sub-agent's, its
tool calls and plan are the run's live status, thread follow-ups reach the same ACP session (a new one after a
restart), a kill cancels it, its permission requests are Approve/Deny buttons for the owner or a moderator, and its
file requests stay inside its working directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.harness import QUICK_STATUS_EDITS, announcement_for, answer_to
from tests.polling import eventually
from tests.test_wire_approvals import approvals_time_out_at_once
from tests.test_wire_control import command, member
from tests.test_wire_status import buttons, click, status_for
from tests.test_wire_threads import THREADS_ON

AGENT = Path(__file__).parent / "fakes" / "acp_agent.py"


def with_acp(world) -> Path:
    """ACP agent ``coder`` is the fake, working in ``work/`` of the test's directory; the file it logs to."""
    work = world.tmp_path / "work"
    work.mkdir()
    log = world.tmp_path / "acp.jsonl"
    world.monkeypatch.setenv("TB_TEST_ACP_LOG", str(log))
    world.monkeypatch.setenv("TB_TEST_ACP_GATE", str(world.tmp_path / "gate"))
    world.extra_config += (
        f'[acp_agents.coder]\ncommand = "{sys.executable}"\nargs = ["{AGENT}"]\ncwd = "{work}"\n'
        'env_from = { ACP_LOG_FILE = "TB_TEST_ACP_LOG", ACP_GATE_FILE = "TB_TEST_ACP_GATE" }\n'
    )
    return log


def events(log: Path, kind: str | None = None) -> list[dict]:
    found = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [event for event in found if kind is None or event["event"] == kind]


async def spawn_acp(world, task: str, user=None, **options) -> str:
    """``/subagents spawn runtime:acp agent:coder``; the run id prefix."""
    answer = await command(
        world, user or world.alice, "subagents spawn", agent="coder", task=task, runtime="acp", **options
    )
    assert answer.startswith("Spawned subagent coder (session agent:main:subagent:"), answer
    return answer.rsplit("run ", 1)[1].rstrip(").")


async def logged(world, log: Path, kind: str, count: int = 1) -> list[dict]:
    """Wait until the fake logged ``count`` events of ``kind``."""
    await eventually(
        lambda: len(events(log, kind)) >= count, timeout=10, describe=lambda: f"{count} {kind}: {events(log)}"
    )
    return events(log, kind)


async def test_the_final_message_is_announced_and_thread_follow_ups_reach_the_same_session_until_a_restart(world):
    world.extra_config = THREADS_ON
    log = with_acp(world)
    bot = await world.start_bot()

    run_id = await spawn_acp(world, "plan; reply:Fixed the bug.", thread=True)
    [thread] = world.discord.threads(world.channel)
    announcement = await world.discord.wait_for_message(thread, announcement_for(run_id))
    assert "Fixed the bug." in announcement["content"]
    assert world.llm.requests == []  # the bot's model had nothing to do with it
    await world.quiescent()

    question = await world.discord.send_user_message(world.alice, thread, "And the tests?")
    answer = await world.discord.wait_for_message(thread, answer_to(question))
    assert answer["content"].endswith("echo: And the tests?")
    [first, second] = events(log, "prompt")
    assert first["text"] == "plan; reply:Fixed the bug." and second["text"] == "And the tests?"
    assert first["session"] == second["session"] and len(events(log, "start")) == 1
    history = await command(world, world.alice, "subagents log", target="1")
    assert history.splitlines()[1:] == [
        "User: plan; reply:Fixed the bug.",
        "Assistant: Fixed the bug.",
        "User: And the tests?",
        "Assistant: echo: And the tests?",
    ]
    await world.quiescent()

    await world.stop_bot(bot)  # an ACP session does not survive a restart: the next prompt opens a new one
    await world.start_bot()
    again = await world.discord.send_user_message(world.alice, thread, "Still there?")
    answer = await world.discord.wait_for_message(thread, answer_to(again))
    assert answer["content"].endswith("echo: Still there?")
    assert len(events(log, "start")) == 2 and events(log, "prompt")[-1]["session"] != first["session"]


async def test_live_status_shows_the_agents_tool_call_and_plan_while_it_runs(world):
    world.status_edit_interval = QUICK_STATUS_EDITS
    log = with_acp(world)
    await world.start_bot()

    run_id = await spawn_acp(world, "tool:Editing main.py; gate; plan; reply:done")
    status = await status_for(world, run_id, lambda m: "🔧 Editing main.py (in progress)" in m["content"])
    assert " · running · " in status["content"] and buttons(status)  # live, with its Kill and Steer buttons
    assert status["content"].splitlines()[1] == "🔧 Editing main.py (in progress)"
    info = await command(world, world.alice, "subagents info", target="1")
    assert "Runtime: acp (coder)" in info and "Now: 🔧 Editing main.py (in progress)" in info
    (world.tmp_path / "gate").touch()

    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "done" in announcement["content"]
    final = await status_for(world, run_id, lambda m: not buttons(m))
    assert "🔧" not in final["content"] and "📋" not in final["content"]
    assert world.rows("SELECT COUNT(*) FROM run_activity") == [(0,)]
    assert len(await logged(world, log, "prompt")) == 1


async def test_kill_cancels_the_acp_session_and_the_run_ends_killed(world):
    log = with_acp(world)
    await world.start_bot()

    run_id = await spawn_acp(world, "hold")
    [prompt] = await logged(world, log, "prompt")
    assert await command(world, world.alice, "subagents kill", target="1") == "killed hold."

    [cancel] = await logged(world, log, "cancel")
    assert cancel["session"] == prompt["session"]
    await world.until("SELECT status FROM runs", [("killed",)])
    assert world.rows("SELECT id FROM runs")[0][0].startswith(run_id)
    info = await command(world, world.alice, "subagents info", target="1")
    assert "Status: killed" in info and "Runtime: acp (coder)" in info


async def permission_request(world, predicate=lambda m: True) -> dict:
    return await world.discord.wait_for_message(
        world.channel, lambda m: "`Edit main.py`" in m["content"] and predicate(m)
    )


async def test_a_permission_request_is_refused_to_a_stranger_and_the_owners_approve_lets_the_agent_go_on(world):
    log = with_acp(world)
    await world.start_bot()
    bob = member(world, "bob")

    run_id = await spawn_acp(world, "ask; reply:edited")
    request = await permission_request(world, lambda m: bool(buttons(m)))
    [approval_id] = [row[0] for row in world.rows("SELECT id FROM approvals")]
    assert request["content"].startswith(f"✋ Run {run_id} wants to call `Edit main.py` with:")
    assert world.rows("SELECT status FROM runs") == [("running",)]

    inter, _ = await click(world, bob, request, f"approval:approve:{approval_id}")
    refusal = await world.discord.wait_followup(inter)
    assert refusal["flags"] & 64
    assert refusal["content"].startswith("⚠️ You can only approve tool calls of runs you started")
    assert events(log, "permission") == []

    inter, _ = await click(world, world.alice, request, f"approval:approve:{approval_id}")
    assert (await world.discord.wait_followup(inter))["content"] == f"Approved `Edit main.py` for run {run_id}."
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "edited" in announcement["content"]
    assert [event["outcome"] for event in events(log, "permission")] == ["yes"]
    await permission_request(world, lambda m: m["content"].startswith("✅") and not buttons(m))


async def test_nobody_deciding_in_time_denies_the_agents_request(world, monkeypatch):
    log = with_acp(world)
    approvals_time_out_at_once(monkeypatch)
    await world.start_bot()

    run_id = await spawn_acp(world, "ask; reply:went on")
    edited = await permission_request(world, lambda m: "nobody decided" in m["content"])
    assert edited["content"] == f"⏱️ `Edit main.py` (run {run_id}) denied: nobody decided in time."
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert [event["outcome"] for event in events(log, "permission")] == ["no"]


async def test_file_requests_stay_inside_the_working_directory(world):
    log = with_acp(world)
    (world.tmp_path / "work" / "notes.txt").write_text("inside\n")
    (world.tmp_path / "secret.txt").write_text("outside\n")
    (world.tmp_path / "work" / "link.txt").symlink_to(world.tmp_path / "secret.txt")
    await world.start_bot()

    script = (
        f"read:notes.txt; read:../secret.txt; read:link.txt; read:{world.tmp_path / 'secret.txt'}; write:out.txt=hi"
    )
    run_id = await spawn_acp(world, script + "; write:../escaped.txt=no; reply:done")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    reads = events(log, "read")
    assert reads[0] == {"event": "read", "path": "notes.txt", "content": "inside\n"}
    for refused in reads[1:]:
        assert "outside the working directory" in refused["error"] and "content" not in refused
    assert (world.tmp_path / "work" / "out.txt").read_text() == "hi"
    assert not (world.tmp_path / "escaped.txt").exists()
    assert "outside the working directory" in events(log, "write")[1]["error"]


async def test_an_agents_sessions_spawn_with_runtime_acp_runs_the_coding_agent_and_an_unknown_one_is_refused(world):
    log = with_acp(world)
    world.llm.tool_call("sessions_spawn", {"task": "nope-agent", "runtime": "acp", "agentId": "nope"})
    world.llm.tool_call("sessions_spawn", {"task": "reply:patched", "runtime": "acp", "agentId": "coder"})

    def main_agent(body: dict) -> str:
        last = body["messages"][-1]
        if "[Internal task completion event]" in str(last["content"]):  # it tells what the coding agent answered
            return "The coding agent says: " + ("patched" if "patched" in last["content"] else "nothing")
        return "Started." if last["role"] == "tool" else "ok"

    world.llm.default = main_agent
    await world.start_bot()

    asked = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> go")
    await world.discord.wait_for_message(world.channel, answer_to(asked))
    results = [
        json.loads(r["messages"][-1]["content"]) for r in world.llm.requests if r["messages"][-1]["role"] == "tool"
    ]
    assert results[0] == {"status": "error", "error": 'Unknown ACP agent "nope". Configured ACP agents: coder.'}
    assert results[1]["status"] == "accepted"
    told = f"<@{world.alice.id}> The coding agent says: patched"
    await world.discord.wait_for_message(world.channel, lambda message: message["content"] == told)
    assert [event["text"] for event in events(log, "prompt")] == ["reply:patched"]
    assert world.rows("SELECT acp_agent FROM sessions WHERE acp_agent IS NOT NULL") == [("coder",)]


async def test_a_persons_spawn_of_an_unknown_acp_agent_gets_a_private_specific_error(world):
    with_acp(world)
    await world.start_bot()
    other = member(world, "bob")

    answer = await command(world, other, "subagents spawn", agent="nope", task="x", runtime="acp")
    assert answer == '⚠️ Unknown ACP agent "nope". Configured ACP agents: coder.'
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]


async def test_an_agent_that_dies_mid_run_fails_it_with_a_reason_and_the_next_spawn_starts_it_again(world):
    log = with_acp(world)
    await world.start_bot()

    run_id = await spawn_acp(world, "reply:half done; die")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "❌ Subagent" in announcement["content"]
    assert "failed: ACP agent 'coder' failed: Connection closed" in announcement["content"]

    again = await spawn_acp(world, "reply:all done")
    assert "all done" in (await world.discord.wait_for_message(world.channel, announcement_for(again)))["content"]
    assert len(events(log, "start")) == 2


async def test_subagents_send_from_the_channel_is_a_further_prompt_to_the_same_session(world):
    log = with_acp(world)
    await world.start_bot()
    run_id = await spawn_acp(world, "reply:first answer")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    await world.quiescent()

    answer = await command(world, world.alice, "subagents send", target="1", message="reply:the second answer")

    assert answer == "the second answer"
    [first, second] = events(log, "prompt")
    assert second["text"] == "reply:the second answer" and second["session"] == first["session"]
