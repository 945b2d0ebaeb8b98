"""Code blocks too long for one message become files named after their language; the agent's files ride on the
last message, ten at most per message; the same announcement always renders the same parts."""

from bot.core.runs.announcements import Announcement, PostedFile
from bot.discord_adapter.code_files import extension_of, take_out_long_blocks
from bot.discord_adapter.render import render
from bot.records import RunStatus


def block(language: str, lines: int = 150) -> str:
    body = "\n".join(f"line {n} of the {language or 'plain'} block" for n in range(lines))
    return f"```{language}\n{body}\n```"


def test_each_language_gets_its_extension_and_unknown_or_none_gets_txt():
    assert [extension_of(f"```{lang}") for lang in ("python", "js", "json", "TypeScript", "brainfuck", "")] == [
        "py",
        "js",
        "json",
        "ts",
        "txt",
        "txt",
    ]


def test_long_blocks_become_numbered_files_and_short_ones_stay():
    text = f"Intro\n{block('python')}\nmiddle\n```js\nshort()\n```\n{block('json')}\n{block('')}\nend"
    kept, files = take_out_long_blocks(text)
    assert [name for name, _ in files] == ["snippet.py", "snippet-2.json", "snippet-3.txt"]
    assert files[0][1].decode().startswith("line 0 of the python block\n") and b"```" not in files[0][1]
    assert kept.splitlines()[0:3] == ["Intro", "📎 `snippet.py` (150 lines)", "middle"]
    assert "```js\nshort()\n```" in kept and kept.endswith("📎 `snippet-3.txt` (150 lines)\nend")
    assert take_out_long_blocks(text) == (kept, files)


def test_a_block_left_open_runs_to_the_end_and_a_one_line_block_is_text():
    kept, files = take_out_long_blocks("```py one line ``` stays\n" + block("python")[: -len("\n```")])
    assert kept == "```py one line ``` stays\n📎 `snippet.py` (150 lines)"
    assert files[0][1].decode().endswith("line 149 of the python block\n")


def announcement(body: str, files: list[str]) -> Announcement:
    return Announcement(
        kind="reply",
        status=RunStatus.COMPLETED,
        status_line="completed successfully",
        body=body,
        agent_label="main",
        run_id="r" * 32,
        session_key="s",
        files=[PostedFile(name=name, size=1) for name in files],
    )


def test_the_agents_files_go_on_the_last_message_and_more_than_ten_spill_over():
    names = [f"f{n}.txt" for n in range(12)]
    stored = {name: name.encode() for name in names}
    messages = render(announcement(f"See\n{block('python')}", names), stored)
    assert [len(message.attachments) for message in messages] == [10, 3]
    assert messages[0].attachments[0][0] == "snippet.py"
    assert messages[1].content == "-# 📎 more files (1/1)"
    assert render(announcement(f"See\n{block('python')}", names), stored) == messages


def test_a_file_gone_from_the_store_is_left_out_and_a_long_text_keeps_result_md():
    messages = render(announcement("x " * 4000, ["kept.md", "gone.md"]), {"kept.md": b"k"})
    assert [[name for name, _ in message.attachments] for message in messages] == [["result.md", "kept.md"]]
