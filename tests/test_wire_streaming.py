"""Answers that stream: one message posted early, edited as the model writes, and the final text over it once."""

from __future__ import annotations

from tests.fakes.openai_server import Step
from tests.harness import announcement_for, answer_to
from tests.polling import eventually as _eventually
from tests.test_wire_chat import replies_to
from tests.test_wire_control import command, member
from tests.test_wire_persona import WEBHOOK_EXECUTE
from tests.test_wire_threads import THREADS_ON, spawn_into_thread
from tests.test_wire_voice import MainAgent
from tests.test_wire_voice import mention as voice_mention

MARKER = "-# ✍️ writing…"
WORDS = " ".join(f"word{n}" for n in range(40))


def slow(text: str, chunk_delay: float = 0.1) -> Step:
    """A streamed answer arriving a word at a time."""
    return Step.reply(text, chunk_delay=chunk_delay)


async def mention(world, user, text: str, channel=None) -> dict:
    return await world.discord.send_user_message(
        user, channel or world.channel, f"<@{world.discord.bot_user_id}> {text}"
    )


async def eventually(check, timeout: float = 10.0, describe: str = "the answer's messages"):
    return await _eventually(check, timeout=timeout, describe=describe)


async def final_text_of(world, message_id, text: str, timeout: float = 10.0) -> dict:
    """The message, once it holds exactly ``text``."""
    return await _eventually(
        lambda: (m := world.discord.get_message(message_id)) is not None and m["content"] == text and m,
        timeout=timeout,
        describe=lambda: f"message {message_id}: {world.discord.get_message(message_id)['content']!r}",
    )


def bot_replies(world, to: dict) -> list[dict]:
    return [m for m in world.bot_messages() if replies_to(world, to)(m)]


async def test_a_mention_is_answered_while_written_then_edited_into_the_final_text(world):
    world.stream_answers = True
    world.discord.edit_rate_limit = (5, 5.0)  # Discord's per-channel bucket: pacing keeps under it
    world.llm.enqueue(slow(WORDS), slow("second " + WORDS))
    await world.start_bot()
    asked = await mention(world, world.alice, "talk")

    draft = await world.discord.wait_for_message(world.channel, lambda m: replies_to(world, asked)(m))
    assert draft["content"].endswith(MARKER)  # shown while written, marked as such
    partial = draft["content"].removesuffix(MARKER).strip()
    assert partial and WORDS.startswith(partial) and partial != WORDS
    final = await final_text_of(world, draft["id"], WORDS)

    assert [m["id"] for m in bot_replies(world, asked)] == [final["id"]]  # one message: no second, final post
    meta = world.discord.message_meta(final)
    assert meta.edits >= 2  # edited as the text grew, then into the final text
    gaps = [later - earlier for earlier, later in zip(meta.edited_at[:-1], meta.edited_at[1:-1], strict=False)]
    assert all(gap >= 0.9 for gap in gaps), gaps  # about once a second: coalesced, never a burst
    assert world.discord.edits_rate_limited == 0
    assert meta.allowed_mentions["parse"] == []  # the model's words never ping

    # the second message, by another member, streams too, into a message of its own
    bob = member(world, "bob")
    again = await mention(world, bob, "more")
    second = await world.discord.wait_for_message(world.channel, lambda m: replies_to(world, again)(m))
    await final_text_of(world, second["id"], "second " + WORDS)
    assert world.discord.get_message(final["id"])["content"] == WORDS  # the first answer stays as it was
    assert [m["id"] for m in bot_replies(world, again)] == [second["id"]]


async def test_a_long_answer_grows_into_more_messages_that_the_final_text_fills(world):
    world.stream_answers = True
    long = " ".join(f"line{n:04d}" for n in range(400))  # about 3,600 characters: two messages
    world.llm.enqueue(Step.reply(long, chunk_delay=0.005))
    await world.start_bot()
    asked = await mention(world, world.alice, "a long one")

    first = await world.discord.wait_for_message(world.channel, lambda m: replies_to(world, asked)(m))
    await eventually(lambda: len(world.bot_messages()) >= 2 and MARKER not in world.bot_messages()[-1]["content"])
    texts = [m["content"] for m in world.bot_messages()]
    assert len(texts) == 2 and first["id"] == world.bot_messages()[0]["id"]
    assert " ".join(" ".join(texts).split()) == long  # the final text, whole, across the draft's own messages
    assert all(MARKER not in text for text in texts)


async def test_a_spawned_subagent_announces_while_it_writes(world):
    world.stream_answers = True
    world.llm.enqueue(slow(WORDS))
    await world.start_bot()
    await command(world, world.alice, "subagents spawn", agent="main", task="write")

    draft = await world.discord.wait_for_message(world.channel, lambda m: MARKER in m["content"])
    assert "writing…" in draft["content"].splitlines()[0]  # its header says it is still writing
    final = await eventually(
        lambda: "completed successfully" in (m := world.discord.get_message(draft["id"]))["content"] and m
    )
    assert WORDS in final["content"] and MARKER not in final["content"]
    assert [m["id"] for m in world.bot_messages() if "Subagent" in m["content"]] == [draft["id"]]


async def test_a_rate_limited_edit_is_dropped_and_never_holds_up_the_final_text(world):
    world.stream_answers = True
    world.llm.enqueue(slow(WORDS))
    # the first edit of the draft is refused for 20 seconds: the final text must not wait that out
    world.discord.inject_failure("PATCH", r"^/channels/\d+/messages/\d+$", 429, times=1, retry_after=20)
    await world.start_bot()
    asked = await mention(world, world.alice, "talk")

    draft = await world.discord.wait_for_message(world.channel, lambda m: replies_to(world, asked)(m))
    await final_text_of(world, draft["id"], WORDS, timeout=12.0)
    edits = world.discord.requests_matching("PATCH", rf"/messages/{draft['id']}$")
    refused = [r.json["content"] for r in edits if r.status == 429]
    assert len(refused) == 1
    assert [r.json["content"] for r in edits if r.status == 200].count(refused[0]) == 0  # never sent late


async def test_a_stopped_answer_keeps_its_text_marked_stopped(world):
    world.stream_answers = True
    world.llm.enqueue(slow(WORDS, chunk_delay=0.3))
    await world.start_bot()
    asked = await mention(world, world.alice, "talk")
    draft = await world.discord.wait_for_message(world.channel, lambda m: replies_to(world, asked)(m))

    await command(world, world.alice, "stop")
    stopped = await eventually(
        lambda: "stopped before it was done" in (m := world.discord.get_message(draft["id"]))["content"] and m
    )
    assert MARKER not in stopped["content"]
    assert WORDS.startswith(stopped["content"].splitlines()[0].strip())
    assert [m["id"] for m in bot_replies(world, asked)] == [draft["id"]]


async def test_a_restart_mid_stream_posts_the_final_text_over_the_draft_once(world):
    world.stream_answers = True
    world.llm.enqueue(slow(WORDS, chunk_delay=0.3), slow(WORDS))
    bot = await world.start_bot()
    asked = await mention(world, world.alice, "talk")
    draft = await world.discord.wait_for_message(world.channel, lambda m: replies_to(world, asked)(m))

    await world.stop_bot(bot)  # mid-stream: the draft stays as it was, marked as being written
    assert world.discord.get_message(draft["id"])["content"].endswith(MARKER)
    await world.start_bot()  # the run resumes, and its answer is written over the same message

    await final_text_of(world, draft["id"], WORDS, timeout=15.0)
    await world.quiescent()
    assert [m["id"] for m in bot_replies(world, asked)] == [draft["id"]]


async def test_an_admin_turns_streaming_off_here_and_a_member_may_not(world):
    world.stream_answers = True
    world.llm.enqueue(Step.reply(WORDS))
    await world.start_bot()
    bob = member(world, "bob")
    refused = await command(world, bob, "settings streaming", enabled=False)
    assert "Manage Server" in refused

    admin = member(world, "admin", manage_guild=True)
    said = await command(world, admin, "settings streaming", enabled=False)
    assert "posted whole" in said
    asked = await mention(world, bob, "talk")
    answer = await world.discord.wait_for_message(world.channel, lambda m: replies_to(world, asked)(m))
    assert answer["content"] == WORDS  # whole at once
    assert world.discord.message_meta(answer).edits == 0
    assert "posted whole" in await command(world, admin, "settings streaming")  # shown, unchanged


async def test_a_bound_thread_answers_while_written_under_its_agents_name(world):
    world.stream_answers = True
    world.extra_config = THREADS_ON
    world.llm.enqueue(slow(WORDS), slow("then " + WORDS))
    await world.start_bot()
    _, thread = await spawn_into_thread(world)

    announcement = await world.discord.wait_for_message(thread, lambda m: MARKER in m["content"])
    assert announcement.get("webhook_id")  # written under the sub-agent's persona, as its final text is
    await eventually(lambda: WORDS in world.discord.get_message(announcement["id"])["content"])
    await world.quiescent()

    question = await mention(world, world.alice, "and then?", channel=thread)
    reply = await world.discord.wait_for_message(thread, answer_to(question))
    assert reply.get("webhook_id") and reply["content"].endswith(MARKER)
    await final_text_of(world, reply["id"], "then " + WORDS)
    edits = world.discord.requests_matching("PATCH", rf"^/webhooks/\d+/[^/]+/messages/{reply['id']}$")
    assert len(edits) >= 2  # edited through the webhook while written, then into the final text
    assert [m["id"] for m in world.discord.channel_messages(thread) if answer_to(question)(m)] == [reply["id"]]


async def test_a_restart_without_resuming_says_so_over_the_draft(world):
    world.stream_answers = True
    world.extra_config = "[durability]\nresume_interrupted = false\n"
    world.llm.enqueue(slow(WORDS, chunk_delay=0.3))
    bot = await world.start_bot()
    asked = await mention(world, world.alice, "talk")
    draft = await world.discord.wait_for_message(world.channel, lambda m: replies_to(world, asked)(m))

    await world.stop_bot(bot)
    await world.start_bot()

    told = await eventually(
        lambda: "restarted" in (m := world.discord.get_message(draft["id"]))["content"] and m, timeout=15.0
    )
    assert MARKER not in told["content"]
    await world.quiescent()
    assert [m["id"] for m in bot_replies(world, asked)] == [draft["id"]]


async def test_the_main_agent_tells_a_result_while_it_writes_and_a_silent_turn_shows_nothing(world):
    world.stream_answers = True
    agent = MainAgent(world, voice=slow("Good news: " + WORDS))
    await world.start_bot()

    await voice_mention(world, "please research the answer")
    told = await world.discord.wait_for_message(
        world.channel, lambda m: m["content"].startswith(f"<@{world.alice.id}> Good")
    )
    assert told["content"].endswith(MARKER)  # the voice turn is written while it is written, mentioning alice
    await final_text_of(world, told["id"], f"<@{world.alice.id}> Good news: {WORDS}")
    await world.quiescent()
    assert not any("Found 12." in m["content"] for m in world.bot_messages())  # the sub-agent's words: not shown
    assert [int(u) for u in world.discord.message_meta(told).allowed_mentions["users"]] == [world.alice.id]

    agent.voice = "NO_REPLY"
    before = len(world.bot_messages())
    await voice_mention(world, "please research the answer")
    await eventually(lambda: len(agent.voiced) == 2, describe="the second voice turn")
    await world.quiescent()
    assert len(world.bot_messages()) == before + 1  # the mention's answer; the silent turn shows nothing


async def test_an_answer_too_long_for_messages_ends_as_one_with_its_file(world):
    world.stream_answers = True
    huge = " ".join(f"row{n:05d}" for n in range(900))  # about 8,100 characters: a preview and result.md at the end
    world.llm.enqueue(Step.reply(huge, chunk_delay=0.003))
    await world.start_bot()
    asked = await mention(world, world.alice, "everything")
    first = await world.discord.wait_for_message(world.channel, lambda m: replies_to(world, asked)(m))
    await eventually(lambda: len(world.bot_messages()) >= 3, describe="the draft grown to three messages")

    final = await eventually(
        lambda: world.discord.message_files(first["id"]) and world.discord.get_message(first["id"]),
        describe="the draft's first message carrying result.md",
    )
    [(name, blob)] = world.discord.message_files(first["id"])
    assert name == "result.md" and blob.decode() == huge
    assert "attached as result.md" in final["content"] and MARKER not in final["content"]
    await world.quiescent()
    assert [m["id"] for m in world.bot_messages()] == [first["id"]]  # the draft's other messages are gone


async def test_a_draft_whose_post_lost_its_answer_is_posted_once(world):
    world.stream_answers = True
    world.llm.enqueue(slow(WORDS))
    await world.start_bot()
    # Discord makes the draft's message, but its answer is lost: the retry must not make a second one
    world.discord.inject_failure("POST", rf"^/channels/{world.channel.id}/messages$", 0, after_commit=True)
    asked = await mention(world, world.alice, "talk")

    draft = await world.discord.wait_for_message(world.channel, lambda m: replies_to(world, asked)(m))
    await final_text_of(world, draft["id"], WORDS)
    await world.quiescent()
    assert [m["id"] for m in bot_replies(world, asked)] == [draft["id"]]
    posts = world.discord.requests_matching("POST", rf"^/channels/{world.channel.id}/messages$")
    [lost] = [post for post in posts if post.injected]
    assert lost.json["content"].endswith(MARKER)  # it was the draft's post whose answer was lost


async def test_a_draft_whose_webhook_post_lost_its_answer_is_found_not_posted_again(world):
    world.stream_answers = True
    world.extra_config = THREADS_ON
    world.llm.hang(then=slow(WORDS))
    await world.start_bot()
    run_id, thread = await spawn_into_thread(world)
    await world.llm.wait_hanging(1)
    # the persona's post is made but its answer is lost; a webhook takes no nonce, so the draft looks before posting
    rule = world.discord.inject_failure("POST", WEBHOOK_EXECUTE, 500, times=1, after_commit=True)
    world.llm.release()

    announced = await world.discord.wait_for_message(thread, announcement_for(run_id))
    await world.quiescent()
    posted = [m for m in world.discord.channel_messages(thread) if announcement_for(run_id)(m)]
    assert [m["id"] for m in posted] == [announced["id"]] and WORDS in posted[0]["content"]
    assert MARKER not in posted[0]["content"] and posted[0].get("webhook_id")
    assert rule.hits == 1


async def test_a_spanish_server_sees_its_answers_written_in_spanish(world):
    world.stream_answers = True
    world.guild.locale = "es-ES"
    world.llm.enqueue(slow(WORDS, chunk_delay=0.2))
    await world.start_bot()
    await command(world, world.alice, "subagents spawn", agent="main", task="write")

    draft = await world.discord.wait_for_message(world.channel, lambda m: "escribiendo…" in m["content"])
    header, *_, last = draft["content"].splitlines()
    assert header.endswith("escribiendo…") and last == "-# ✍️ escribiendo…"  # the header and the marker: Spanish
    await command(world, world.alice, "stop")
    stopped = await eventually(
        lambda: "detenida antes de terminar" in (m := world.discord.get_message(draft["id"]))["content"] and m
    )
    assert "escribiendo" not in stopped["content"]  # neither its header nor its last line says it is writing
    assert stopped["content"].splitlines()[0].endswith(": detenida antes de terminar")
