"""Results as files out, seen from Discord: a sub-agent's attach_file posts its file with the announcement, exactly
once across a restart; bad names and oversized files are refused in words the model reads; a code block too long
for one message is posted as a file named after its language; /subagents log says what was attached, to whom it may
see it."""

from __future__ import annotations

import json

from tests.harness import announcement_for
from tests.test_wire_control import command, member, spawn
from tests.test_wire_delivery import MESSAGES_ROUTE, announcements, wait_for_outbox
from tests.test_wire_memory import ask, offered, tool_results

REPORT = "# Findings\n\n| city | rain |\n|---|---|\n| Oslo | 12 mm |\n"


async def test_a_sub_agents_file_is_posted_with_its_announcement_with_the_exact_bytes(world):
    world.llm.tool_call("attach_file", {"name": "report.md", "content": REPORT})
    world.llm.reply("The report is attached.")
    await world.start_bot()

    run_id = await spawn(world, task="Write the rain report")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    assert "attach_file" in offered(world.llm.requests[0])
    assert json.loads(tool_results(world.llm.requests[1])[0]) == {
        "status": "ok",
        "name": "report.md",
        "bytes": len(REPORT.encode()),
        "posted": "with this run's result",
    }
    assert "The report is attached." in announcement["content"]
    assert world.discord.message_files(announcement) == [("report.md", REPORT.encode())]


async def test_the_main_agents_reply_carries_its_file_in_a_channel_and_in_a_thread_each_its_own(world):
    world.llm.tool_call("attach_file", {"name": "plan.txt", "content": "1. rain gauge\n2. spreadsheet\n"})
    world.llm.reply("Here is the plan.")
    bot = await world.start_bot()

    answer = await ask(world, world.alice, world.channel, "draft a plan as a file")
    assert answer["content"] == "Here is the plan."
    assert world.discord.message_files(answer) == [("plan.txt", b"1. rain gauge\n2. spreadsheet\n")]

    await world.stop_bot(bot)
    side = world.discord.add_thread(world.channel, "side")
    world.llm.tool_call("attach_file", {"name": "gauge.py", "content": "print('12 mm')\n"})
    world.llm.reply("And the script.")
    world.llm.reply("Nothing to attach.")
    await world.start_bot()
    in_thread = await ask(world, world.alice, side, "and a script for it")
    assert in_thread["content"] == "And the script."
    assert world.discord.message_files(in_thread) == [("gauge.py", b"print('12 mm')\n")]
    plain = await ask(world, world.alice, world.channel, "thanks")
    assert plain["content"] == "Nothing to attach." and world.discord.message_files(plain) == []


async def test_bad_names_oversized_files_and_one_too_many_are_refused_in_words_the_model_reads(world):
    world.extra_config = "[files]\nmax_file_bytes = 100\nmax_files_per_run = 1\n"
    world.llm.tool_call("attach_file", {"name": "../../etc/passwd.txt", "content": "x"})
    world.llm.tool_call("attach_file", {"name": "notes", "content": "x"})
    world.llm.tool_call("attach_file", {"name": "big.txt", "content": "é" * 51})
    world.llm.tool_call("attach_file", {"name": "small.txt", "content": "fits"})
    world.llm.tool_call("attach_file", {"name": "second.txt", "content": "one too many"})
    world.llm.tool_call("attach_file", {"name": "small.txt", "content": "fits better"})
    world.llm.reply("Done, with one file.")
    await world.start_bot()

    run_id = await spawn(world, task="Attach what you can")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    read = [json.loads(tool_results(world.llm.requests[turn])[-1]) for turn in range(1, 7)]
    assert read[0] == {
        "status": "error",
        "error": "File not attached: A file name has no folders: no '/', '\\' or '..'.",
    }
    assert read[1]["error"].startswith("File not attached: A file name is letters, digits,")
    assert "ends with an extension such as '.py'" in read[1]["error"]
    assert read[2] == {"status": "error", "error": "File not attached: it has 102 bytes; a file has at most 100."}
    assert read[3]["status"] == "ok"
    assert read[4] == {
        "status": "error",
        "error": "File not attached: this run already has 1 files, the most it may attach.",
    }
    assert read[5] == {"status": "ok", "name": "small.txt", "bytes": 11, "posted": "with this run's result"}
    assert world.rows("SELECT name, content FROM run_files") == [("small.txt", "fits better")]
    assert world.discord.message_files(announcement) == [("small.txt", b"fits better")]


CODE = "\n".join(f"def step_{n}(x):\n    return x * {n}  # scale the reading by {n}\n" for n in range(60))


async def test_a_code_block_too_long_for_one_message_is_posted_as_a_file_named_after_its_language(world):
    body = f'Here is the script:\n```python\n{CODE}\n```\nAnd a config:\n```json\n{{"unit": "mm"}}\n```\nRun it.'
    assert len(CODE) > 2000 and len(body) < 6000
    world.llm.reply(body)
    await world.start_bot()

    run_id = await spawn(world, task="Write the script")
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    await world.quiescent()

    posted = [m for m in world.bot_messages() if m["id"] >= announcement["id"]]
    assert len(posted) == 1  # not split mid-block: one message and the file
    content = announcement["content"]
    assert "Here is the script:\n📎 `snippet.py` (" in content and "```python" not in content
    assert 'And a config:\n```json\n{"unit": "mm"}\n```\nRun it.' in content  # a short block stays in the text
    assert world.discord.message_files(announcement) == [("snippet.py", (CODE + "\n").encode())]


async def test_a_file_is_posted_once_when_the_bot_restarts_mid_delivery(world):
    world.llm.tool_call("attach_file", {"name": "report.md", "content": REPORT})
    world.llm.reply("final answer")
    bot = await world.start_bot(retry_base_delay=60)
    world.discord.inject_failure("POST", MESSAGES_ROUTE, 503, times=1, after_commit=True)

    run_id = await spawn(world)
    await wait_for_outbox(world, lambda row: row == ("pending", 1))
    await world.stop_bot(bot)
    [posted] = announcements(world, run_id)  # Discord created it; the bot never heard
    assert world.discord.message_files(posted) == [("report.md", REPORT.encode())]

    await world.start_bot()
    await wait_for_outbox(world, lambda row: row[0] == "delivered")
    assert announcements(world, run_id) == [posted]
    assert len(world.discord.requests_matching("POST", MESSAGES_ROUTE)) == 1
    assert world.rows("SELECT message_ids_json FROM outbox") == [(f"[{posted['id']}]",)]


async def test_subagents_log_says_what_was_attached_and_another_servers_member_cannot_read_it(world):
    world.guild_commands = False  # synced globally: the commands are there in the other server too
    world.llm.tool_call("attach_file", {"name": "report.md", "content": REPORT})
    world.llm.reply("The report is attached.")
    await world.start_bot()
    run_id = await spawn(world, task="Write the rain report")
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))

    log = await command(world, world.alice, "subagents log", target=run_id)
    assert log.splitlines() == [
        "📜 Subagent log: Write the rain report",
        "User: Write the rain report",
        f"📎 File attached: report.md ({len(REPORT.encode())} bytes)",
        "Assistant: The report is attached.",
    ]
    bob = member(world, "bob")
    assert "📎 File attached: report.md" in await command(world, bob, "subagents log", target=run_id)

    elsewhere = world.discord.add_guild("Elsewhere")
    theirs = world.discord.add_text_channel(elsewhere, "theirs")
    carol = world.discord.add_user("carol")
    world.discord.add_member(elsewhere, carol)
    inter = await world.discord.slash(carol, theirs, "subagents log", target=run_id)
    reply = await world.discord.wait_followup(inter, timeout=40)
    assert reply["flags"] & 64 and reply["content"] == f"⚠️ Unknown subagent id: {run_id}"
    assert world.discord.message_files(reply) == []
