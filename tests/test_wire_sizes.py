"""Size caps seen from Discord: a huge tool result reaches the model, the transcript and the channel cut with a marker;
a run's result is stored up to 1 MiB; a very long reply is one message with the text attached; /subagents log shows
the last messages, each cut to fit."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from tests import stores
from tests.fakes.mcp_server import big
from tests.fakes.openai_server import Step
from tests.harness import announcement_for, answer_to
from tests.test_wire_chat import replies_to
from tests.test_wire_control import command, spawn
from tests.test_wire_focus import focused_thread
from tests.test_wire_mcp import SERVER, with_mcp

TOOL_MARKER = "\n…[truncated: 1,000,000 bytes, showing the first 65,478]"  # the whole result fits in 65,536 bytes
KIB = 1024


def with_big_tool(world, tmp_path) -> None:
    with_mcp(world, tmp_path / "calls.jsonl")
    world.extra_config = world.extra_config.replace(f'args = ["{SERVER}"]', f'args = ["{SERVER}", "--big"]')


def journaled_tool_outputs(world) -> list[tuple[str, int]]:
    """The tool calls DBOS journaled, and how long each one's recorded output is."""
    sql = "SELECT function_name, length(output) FROM operation_outputs WHERE function_name LIKE 'tool.%'"
    if stores.POSTGRESQL:  # DBOS's tables are in the store's own database, in the schema dbos
        return world.rows(sql.replace("operation_outputs", "dbos.operation_outputs"))
    with closing(sqlite3.connect(f"{world.db_path}.dbos")) as journal:
        return journal.execute(sql).fetchall()


def long_text(size: int, word: str = "finding") -> str:
    """Numbered lines of about 80 characters, ``size`` characters in all."""
    lines = "".join(f"{word} {i:07d}: " + "detail " * 9 + "\n" for i in range(size // 70 + 1))
    return lines[:size]


async def test_a_huge_tool_result_reaches_the_model_and_the_store_cut_with_a_marker(world, tmp_path):
    with_big_tool(world, tmp_path)
    world.llm.tool_call("calc__big", {"size": 1_000_000})
    world.llm.enqueue(Step.reply(None))  # nothing to add: the tool result is the run's result
    await world.start_bot()

    run_id = await spawn(world, task="Fetch the big file")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    seen = world.llm.requests[1]["messages"][-1]
    assert seen["role"] == "tool"
    assert seen["content"].startswith("line 0000000 0123456789") and seen["content"].endswith(TOOL_MARKER)
    assert len(seen["content"].encode()) == 65_536
    stored = world.rows("SELECT length(message_json) FROM transcript_messages")
    # the result twice: the tool's answer in the sub-agent's transcript, the completion event in the main session's
    assert max(size for (size,) in stored) < 68 * KIB and sum(size for (size,) in stored) < 2 * 68 * KIB
    [(step, journaled)] = journaled_tool_outputs(world)
    assert step == "tool.calc__big" and journaled < 100 * KIB
    assert world.rows("SELECT result_text FROM runs") == [(seen["content"],)]
    ((payload,),) = world.rows("SELECT length(payload_json) FROM outbox")
    assert payload < 72 * KIB
    assert "✅ Subagent **researcher**" in announcement["content"]
    assert world.discord.message_files(announcement) == [("result.md", seen["content"].encode())]


async def test_a_run_result_is_kept_up_to_one_mebibyte_and_the_cut_is_marked(world):
    body = long_text(2 * KIB * KIB)
    world.llm.reply(body)
    await world.start_bot()

    run_id = await spawn(world, task="Write everything down")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    marker = f"\n…[truncated: {len(body):,} bytes, showing the first 1,048,515]"
    kept = body[: KIB * KIB - len(marker.encode())] + marker
    assert world.rows("SELECT result_text FROM runs") == [(kept,)]
    ((payload,),) = world.rows("SELECT length(payload_json) FROM outbox")
    assert payload < 1.1 * KIB * KIB
    # the main agent learns of it as it would from a tool: cut to the tool-result limit
    ((context,),) = world.rows("SELECT message_json FROM transcript_messages WHERE run_id IS NULL")
    assert "…[truncated: 1,048,576 bytes, showing the first 65,4" in context and len(context) < 68 * KIB
    assert f"full result attached as result.md, {len(kept):,} characters" in announcement["content"]
    assert world.discord.message_files(announcement) == [("result.md", kept.encode())]
    assert len(world.bot_messages()) == 1


async def test_a_200_kb_reply_is_one_message_with_the_whole_text_attached(world):
    body = long_text(200 * 1000, word="paragraph")
    world.llm.reply(body)
    await world.start_bot()

    asked = await world.discord.send_user_message(
        world.alice, world.channel, f"<@{world.discord.bot_user_id}> tell me everything"
    )
    answer = await world.discord.wait_for_message(world.channel, replies_to(world, asked))
    await world.quiescent()

    assert answer["content"].startswith("paragraph 0000000: detail")
    assert answer["content"].endswith(f"*(full reply attached as result.md, {len(body):,} characters)*")
    assert len(answer["content"]) <= 2000
    assert world.discord.message_files(answer) == [("result.md", body.encode())]
    assert [m["id"] for m in world.bot_messages()] == [answer["id"]]


async def test_a_long_reply_in_a_bound_thread_is_one_message_with_the_text_attached(world):
    body = long_text(50_000, word="section")
    world.llm.reply("The memo is drafted.")
    world.llm.reply(body)
    thread = await focused_thread(world, "Draft the memo")

    question = await world.discord.send_user_message(world.alice, thread, "Now the full version?")
    answer = await world.discord.wait_for_message(thread, answer_to(question))
    await world.quiescent()

    assert answer["content"].startswith("section 0000000: detail") and len(answer["content"]) <= 2000
    assert world.discord.message_files(answer) == [("result.md", body.encode())]
    posted = [m for m in world.discord.channel_messages(thread) if int(m["id"]) > int(question["id"])]
    assert [m["id"] for m in posted] == [answer["id"]]


async def test_log_shows_the_last_messages_each_cut_to_fit(world, tmp_path):
    with_big_tool(world, tmp_path)
    world.llm.tool_call("calc__big", {"size": 5000})
    world.llm.reply("Fetched it.")
    await world.start_bot()
    run_id = await spawn(world, task="Fetch the file")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    log = await command(world, world.alice, "subagents log", target="1", limit=3, tools=True)
    result = big(5000)
    assert log.split("\n")[:2] == ["📜 Subagent log: Fetch the file", 'Tool call: calc__big({"size":5000})']
    assert log.endswith(
        f"\nTool result: {result[:1500]}…[truncated: 5,000 characters, showing the first 1,500]\nAssistant: Fetched it."
    )
    assert len(log) < 2000

    short = await command(world, world.alice, "subagents log", target="1", limit=1)
    assert short.split("\n") == ["📜 Subagent log: Fetch the file", "Assistant: Fetched it."]
