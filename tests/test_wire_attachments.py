"""Files and images in: a mention's and a spawn's attachments reach the model (text files as text with their name,
images as image parts for a model that reads them), over the limits or unreadable they are refused to the sender
alone with nothing started, and they stay with the run so a resumed run does not download them again."""

from __future__ import annotations

from tests.fakes.openai_server import Step
from tests.harness import announcement_for, answer_to
from tests.test_wire_control import command, member
from tests.test_wire_threads import THREADS_ON, spawn_into_thread

CODE = b'def greet(name):\n    return f"hello {name}"\n'
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(40)


def mention(world) -> str:
    return f"<@{world.discord.bot_user_id}>"


async def dm_notice(world, user) -> str:
    notice = await world.discord.wait_for_message(world.discord.add_dm_channel(user), lambda m: True)
    return notice["content"]


async def test_a_mentioned_file_reaches_the_model_as_text_with_its_name_whatever_its_name_says(world):
    world.llm.default = lambda body: "Read it."
    await world.start_bot()

    asked = await world.discord.send_user_message(
        world.alice, world.channel, f"{mention(world)} review these", files=[("greet.py", CODE), ("greet", CODE)]
    )
    answer = await world.discord.wait_for_message(world.channel, answer_to(asked))
    assert answer["content"] == "Read it."
    [said] = world.llm.requests[0]["user_texts"]
    assert said.startswith("review these\n\nAttached text file `greet.py` (44 bytes, sha256 ")
    assert f"```\n{CODE.decode()}\n```" in said
    assert "Attached text file `greet` (44 bytes" in said  # no extension: known as text by its content
    assert len(world.discord.cdn_requests) == 2

    second = await world.discord.send_user_message(world.alice, world.channel, f"{mention(world)} and again?")
    await world.discord.wait_for_message(world.channel, answer_to(second))
    first_turn, second_turn = world.llm.requests[1]["user_texts"]
    assert "Attached text file `greet.py`" in first_turn and second_turn == "and again?"
    assert len(world.discord.cdn_requests) == 2  # the next turn's history holds the text: nothing downloaded again


async def test_an_image_reaches_a_vision_model_as_an_image_part(world):
    world.vision_models = ["gpt-4o-mini"]
    world.llm.default = lambda body: "A cat."
    await world.start_bot()

    asked = await world.discord.send_user_message(
        world.alice, world.channel, f"{mention(world)} what is this?", files=[("cat.png", PNG)]
    )
    await world.discord.wait_for_message(world.channel, answer_to(asked))
    [url] = world.llm.requests[0]["images"]
    assert url.startswith(f"{world.discord.base_url}/attachments/{world.channel.id}/") and url.endswith("/cat.png")
    assert "Attached image file `cat.png`" in world.llm.requests[0]["user_texts"][0]

    second = await world.discord.send_user_message(world.alice, world.channel, f"{mention(world)} and now?")
    await world.discord.wait_for_message(world.channel, answer_to(second))
    earlier, now = world.llm.requests[1]["user_texts"]
    assert world.llm.requests[1]["images"] == []  # a later turn sends an earlier image by its label only
    assert earlier.startswith("what is this?\n\nAttached image file `cat.png` (56 bytes, sha256 ")
    assert earlier.endswith("):\n\n(the image was shown in that turn)") and now == "and now?"


async def test_an_image_for_a_model_without_vision_is_refused_privately_naming_the_model(world):
    await world.start_bot()

    await world.discord.send_user_message(
        world.alice, world.channel, f"{mention(world)} what is this?", files=[("cat.png", PNG)]
    )
    notice = await dm_notice(world, world.alice)
    assert notice.startswith("⚠️ Model fake/gpt-4o-mini cannot read images (cat.png): it is not in [providers.fake]")
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]
    assert world.llm.requests == [] and world.bot_messages() == []


async def test_files_over_the_limits_or_unreadable_are_refused_to_the_sender_alone_and_nothing_starts(world):
    world.discord_extra = "max_attachments = 2\nmax_attachment_bytes = 100\nmax_attachments_total_bytes = 150"
    await world.start_bot()
    bob = member(world, "bob")
    cases = [
        (
            world.alice,
            [("a.txt", b"a"), ("b.txt", b"b"), ("c.txt", b"c")],
            "⚠️ You attached 3 files; one message may "
            "attach at most 2 ([discord] max_attachments). Nothing was sent to the model.",
        ),
        (
            bob,
            [("big.txt", b"x" * 120)],
            "⚠️ `big.txt` is 120 bytes; one file may be at most 100 bytes "
            "([discord] max_attachment_bytes). Nothing was sent to the model.",
        ),
        (
            world.alice,
            [("a.txt", b"x" * 80), ("b.txt", b"y" * 80)],
            "⚠️ Your files add up to 160 bytes; one "
            "message's files may add up to at most 150 bytes ([discord] max_attachments_total_bytes). Nothing was sent "
            "to the model.",
        ),
        (
            bob,
            [("data.txt", b"\x00\x01\x02binary")],
            "⚠️ `data.txt` is neither text nor an image (PNG, JPEG, GIF or "
            "WebP), so the model cannot read it. Nothing was sent to the model.",
        ),
    ]
    for user, files, refusal in cases:
        await world.discord.send_user_message(user, world.channel, f"{mention(world)} look", files=files)
        dms = world.discord.add_dm_channel(user)
        await world.discord.wait_for_message(dms, lambda m: m["content"] == refusal)  # noqa: B023
    assert len(world.discord.channel_messages(world.discord.add_dm_channel(bob))) == 2
    assert len(world.discord.cdn_requests) == 1  # only the binary file was downloaded: limits are checked first
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)]
    assert world.llm.requests == [] and world.bot_messages() == []


async def test_spawn_takes_an_attachment_the_log_shows_and_a_resumed_run_does_not_download_again(world):
    world.vision_models = ["gpt-4o-mini"]
    world.llm.enqueue(Step.hang())
    world.llm.default = lambda body: "Reviewed the plan."
    bot = await world.start_bot()

    answer = await command(
        world, world.alice, "subagents spawn", agent="researcher", task="Review", attachment=("plan.md", b"# Plan\n")
    )
    run_id = answer.rsplit("run ", 1)[1].rstrip(").")
    await world.llm.wait_hanging(1)
    assert "Attached text file `plan.md` (7 bytes" in world.llm.requests[0]["user_texts"][0]
    downloads = len(world.discord.cdn_requests)
    assert downloads == 1

    await world.stop_bot(bot)  # the run is mid-turn: after the restart it resumes from what the run kept
    await world.start_bot()
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    resumed = world.llm.requests[-1]["user_texts"][0]
    assert resumed.startswith("Review\n\nAttached text file `plan.md` (7 bytes") and "# Plan" in resumed
    assert len(world.discord.cdn_requests) == downloads

    log = await command(world, world.alice, "subagents log", target="last")
    assert "User: Review\n\nAttached text file `plan.md` (7 bytes, sha256 " in log
    assert "Assistant: Reviewed the plan." in log


async def test_spawn_refuses_an_image_for_a_model_without_vision_and_a_file_over_the_limit(world):
    world.discord_extra = "max_attachment_bytes = 100"
    await world.start_bot()
    bob = member(world, "bob")

    refused = await command(world, bob, "subagents spawn", agent="researcher", task="Look", attachment=("c.png", PNG))
    assert refused.startswith("⚠️ Model fake/gpt-4o-mini cannot read images (c.png)")
    too_big = await command(
        world, world.alice, "subagents spawn", agent="researcher", task="Look", attachment=("big.md", b"x" * 101)
    )
    assert too_big.startswith("⚠️ `big.md` is 101 bytes; one file may be at most 100 bytes")
    assert world.rows("SELECT COUNT(*) FROM runs") == [(0,)] and world.llm.requests == []


async def test_a_bound_thread_takes_files_from_its_owner_only_and_a_running_turn_only_text(world):
    world.extra_config = THREADS_ON
    world.vision_models = ["gpt-4o-mini"]
    world.llm.default = lambda body: f"seen {len(body['messages'])}"
    await world.start_bot()
    _, thread = await spawn_into_thread(world)
    await world.quiescent()

    asked = await world.discord.send_user_message(
        world.alice, thread, "and these?", files=[("greet.py", CODE), ("cat.png", PNG)]
    )
    await world.discord.wait_for_message(thread, answer_to(asked))
    said = world.llm.requests[-1]["user_texts"][-1]
    assert said.startswith("and these?\n\nAttached text file `greet.py`") and "Attached image file `cat.png`" in said
    assert world.llm.requests[-1]["images"][0].endswith("/cat.png")
    await world.quiescent()
    downloads = len(world.discord.cdn_requests)

    bob = member(world, "bob")  # not the owner: not routed, and nothing of his is downloaded
    await world.discord.send_user_message(bob, thread, "mine", files=[("b.txt", b"bob's")])
    assert "only they or a moderator can talk to it there" in await dm_notice(world, bob)
    assert len(world.discord.cdn_requests) == downloads

    world.llm.enqueue(Step.hang())
    busy = await world.discord.send_user_message(world.alice, thread, "think long")
    await world.llm.wait_hanging(1)
    await world.discord.send_user_message(world.alice, thread, "look", files=[("cat.png", PNG)])
    assert await dm_notice(world, world.alice) == (
        "⚠️ The sub-agent is still working, and a running turn reads text only, so the image (cat.png) was not sent. "
        "Send it again once its run has ended."
    )
    world.llm.release()
    await world.discord.wait_for_message(thread, answer_to(busy))
    assert world.rows("SELECT COUNT(*) FROM run_inbox") == [(0,)]


async def test_subagents_send_takes_an_attachment_for_a_finished_sub_agent(world):
    world.llm.default = lambda body: "got: " + world_texts(body)[-1].splitlines()[-2]
    await world.start_bot()
    run_id = (
        (await command(world, world.alice, "subagents spawn", agent="researcher", task="Start"))
        .rsplit("run ", 1)[1]
        .rstrip(").")
    )
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    await world.quiescent()

    reply = await command(
        world, world.alice, "subagents send", target="last", message="and this", attachment=("t.csv", b"a,b\n1,2")
    )
    assert reply == "got: 1,2"
    assert world.llm.requests[-1]["user_texts"][-1].startswith("and this\n\nAttached text file `t.csv` (7 bytes")
    bob = member(world, "bob")
    refused = await command(world, bob, "subagents send", target=run_id, message="x", attachment=("b.txt", b"b"))
    assert refused.startswith("⚠️ You can only send runs you started")


def world_texts(body: dict) -> list[str]:
    return [
        m["content"] if isinstance(m["content"], str) else m["content"][-1]["text"]
        for m in body["messages"]
        if m["role"] == "user"
    ]
