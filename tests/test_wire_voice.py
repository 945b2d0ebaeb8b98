"""The announce chain's end: a sub-agent the main agent spawned is told to people by the main agent, in its own voice.

The completion reaches the main session as the internal event (with its stats line) and starts a main-agent turn
whose reply is what people read; ``NO_REPLY`` posts nothing; completions that arrive together are one turn; a turn
that cannot tell them (it fails, is stopped, or a restart cuts it off) leaves each result announced as it is, once.
A person's own ``/subagents spawn`` still announces directly."""

from __future__ import annotations

import asyncio
import json

from bot.core.runs.internal_context import DELIVER
from bot.records import short_run_id
from tests.fakes.openai_server import Step
from tests.harness import announcement_for, answer_to
from tests.polling import eventually, stays
from tests.test_wire_control import member, spawn

EVENT = "[Internal task completion event]"


def text_of(message: dict) -> str:
    return json.dumps(message)


class MainAgent:
    """The fake model's answers: the main agent spawns what a mention asks for (its answer after the spawn waits for
    ``hold_main``), sub-agents answer, and a voice turn answers with ``voice`` (a string, or a step); every voice
    turn's request is kept."""

    def __init__(self, world, voice: str | Step = "Good news: the answer is 42.", tasks: tuple[str, ...] = ("dig",)):
        self.voice = voice
        self.voiced: list[dict] = []
        self.tasks = tasks
        self.hold_main = asyncio.Event()  # the mention's turn, before its answer
        self.hold_main.set()
        world.llm.default = self.answer

    async def answer(self, body: dict) -> str | Step:
        last = body["messages"][-1]
        if EVENT in text_of(last):
            self.voiced.append(body)
            return self.voice
        if last["role"] == "tool":
            await self.hold_main.wait()
            return "I started it."
        if "[Subagent Context]" in text_of(body["messages"][0]):
            return "Found 12."
        if "please research" in text_of(last):
            return Step.calls([("sessions_spawn", {"task": task}) for task in self.tasks])
        return "As I said: 42."


async def mention(world, text: str, user=None, channel=None) -> dict:
    channel = channel or world.channel
    asked = await world.discord.send_user_message(
        user or world.alice, channel, f"<@{world.discord.bot_user_id}> {text}"
    )
    return await world.discord.wait_for_message(channel, answer_to(asked))


def child_ids(world) -> list[str]:
    return [row[0] for row in world.rows("SELECT id FROM runs WHERE kind = 'spawn' ORDER BY created_at")]


def templates(world) -> list[dict]:
    """The sub-agents' own announcements posted so far."""
    ids = [short_run_id(run_id) for run_id in child_ids(world)]
    return [m for m in world.bot_messages() if any(announcement_for(i)(m) for i in ids)]


async def test_the_main_agent_tells_its_sub_agents_result_in_its_own_voice_and_remembers_it(world):
    agent = MainAgent(world)
    await world.start_bot()

    assert (await mention(world, "please research the answer"))["content"] == "I started it."
    told = await world.discord.wait_for_message(world.channel, lambda m: "the answer is 42" in m["content"])
    await world.quiescent()

    assert told["content"] == f"<@{world.alice.id}> Good news: the answer is 42."
    assert templates(world) == []  # no template: the main agent told it
    assert [m for m in world.bot_messages() if "42" in m["content"]] == [told]
    [child] = child_ids(world)
    [voice] = agent.voiced
    event = voice["messages"][-1]["content"]
    assert f"run_id: {child}" in event and "session_key: agent:main:subagent:" in event
    assert "Found 12." in event and "Stats: runtime" in event and DELIVER in event
    offered = {tool["function"]["name"] for tool in voice.get("tools", [])}
    assert "sessions_spawn" not in offered and "sessions_list" in offered  # it tells; it starts no more work
    answers = "CASE WHEN source_message_id IS NULL THEN 'no message' ELSE 'a message' END"
    assert world.rows(f"SELECT kind, status, {answers} FROM runs ORDER BY created_at") == [
        ("chat", "completed", "a message"),
        ("spawn", "completed", "no message"),
        ("chat", "completed", "no message"),  # the voice turn answers no message
    ]

    second = await mention(world, "what did it find?")  # the next turn's history holds the result and the telling
    assert second["content"] == "As I said: 42."
    history = text_of(world.llm.requests[-1]["messages"])
    assert "Found 12." in history and "Good news: the answer is 42." in history


async def test_a_voice_turn_that_says_no_reply_posts_nothing(world):
    agent = MainAgent(world, voice="NO_REPLY")
    await world.start_bot()

    await mention(world, "please research the answer")
    await eventually(lambda: len(agent.voiced) == 1, timeout=10, describe="the voice turn's request")
    await world.quiescent()

    assert [m["content"] for m in world.bot_messages()] == ["I started it."]
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at")[-1] == ("chat", "completed")


async def test_results_arriving_together_are_one_turn_and_each_member_hears_of_their_own(world):
    agent = MainAgent(world, voice="Both parts are in.", tasks=("dig one", "dig two"))
    agent.hold_main.clear()
    bob = member(world, "bob")
    await world.start_bot()

    bot_id = world.discord.bot_user_id
    asked = await world.discord.send_user_message(world.alice, world.channel, f"<@{bot_id}> please research both")
    await world.until("SELECT status FROM runs WHERE kind = 'spawn'", [("completed",), ("completed",)], timeout=10)
    assert agent.voiced == []  # both results wait for the turn in progress to end
    agent.hold_main.set()
    assert (await world.discord.wait_for_message(world.channel, answer_to(asked)))["content"] == "I started it."
    told = await world.discord.wait_for_message(world.channel, lambda m: "Both parts are in." in m["content"])
    await world.quiescent()

    [voice] = agent.voiced  # one turn, both results in one internal block
    assert voice["messages"][-1]["content"].count(EVENT) == 2
    assert told["content"] == f"<@{world.alice.id}> Both parts are in."
    assert templates(world) == []

    agent.tasks = ("dig for bob",)
    agent.voice = "Bob, yours is done."
    await mention(world, "please research mine", user=bob)
    told_bob = await world.discord.wait_for_message(world.channel, lambda m: "yours is done" in m["content"])
    await world.quiescent()
    assert told_bob["content"] == f"<@{bob.id}> Bob, yours is done."  # Bob's sub-agent, Bob's turn, Bob pinged
    assert len(agent.voiced) == 2 and agent.voiced[1]["messages"][-1]["content"].count(EVENT) == 1


async def test_a_voice_turn_that_fails_leaves_the_result_announced_as_it_is_once(world):
    agent = MainAgent(world, voice=Step.error(500, "the model broke"))
    await world.start_bot()

    await mention(world, "please research the answer")
    [child] = await eventually_children(world, 1)
    announced = await world.discord.wait_for_message(world.channel, announcement_for(short_run_id(child)))
    await world.quiescent()

    assert "✅ Subagent **main**" in announced["content"] and "Found 12." in announced["content"]
    assert announced["content"].startswith(f"<@{world.alice.id}>")
    assert len(agent.voiced) >= 1
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at")[-1] == ("chat", "failed")
    await stays(lambda: templates(world) == [announced], for_seconds=1, describe="the result announced once")
    assert not [m for m in world.bot_messages() if "couldn't answer" in m["content"]]


async def test_a_voice_turn_cut_off_by_a_restart_announces_the_result_once_after_it(world):
    world.extra_config = "[durability]\nresume_interrupted = false\n"
    agent = MainAgent(world, voice=Step.hang())
    bot = await world.start_bot()

    await mention(world, "please research the answer")
    await world.llm.wait_hanging(1, timeout=15)
    [child] = child_ids(world)
    await world.stop_bot(bot)
    assert templates(world) == []

    agent.voice = "never asked"
    await world.start_bot()
    announced = await world.discord.wait_for_message(world.channel, announcement_for(short_run_id(child)))
    await world.quiescent()

    assert "Found 12." in announced["content"]
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at")[-1] == ("chat", "interrupted")
    await stays(lambda: templates(world) == [announced], for_seconds=1, describe="the result announced once")


async def test_stopping_a_voice_turn_announces_the_result_as_it_is(world):
    agent = MainAgent(world, voice=Step.hang())
    await world.start_bot()

    await mention(world, "please research the answer")
    await world.llm.wait_hanging(1, timeout=15)
    [child] = child_ids(world)
    inter = await world.discord.slash(world.alice, world.channel, "stop")
    await world.discord.wait_followup(inter, timeout=20)
    announced = await world.discord.wait_for_message(world.channel, announcement_for(short_run_id(child)))
    await world.quiescent()

    assert "Found 12." in announced["content"]
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at")[-1] == ("chat", "killed")
    assert len(agent.voiced) == 1
    await stays(lambda: templates(world) == [announced], for_seconds=1, describe="the result announced once")


async def test_a_persons_own_spawn_still_announces_directly(world):
    agent = MainAgent(world)
    await world.start_bot()

    run_id = await spawn(world, task="dig it")
    announced = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    await world.quiescent()

    assert "✅ Subagent **researcher**" in announced["content"]
    assert agent.voiced == []
    assert [row[0] for row in world.rows("SELECT kind FROM runs")] == ["spawn"]


async def eventually_children(world, count: int) -> list[str]:
    await eventually(lambda: len(child_ids(world)) == count, timeout=10, describe=f"{count} sub-agents")
    return child_ids(world)


async def test_a_voice_turn_cut_off_by_a_restart_resumes_and_tells_once(world):
    agent = MainAgent(world, voice=Step.hang())
    bot = await world.start_bot()

    await mention(world, "please research the answer")
    await world.llm.wait_hanging(1, timeout=15)
    await world.stop_bot(bot)

    agent.voice = "Good news: the answer is 42."
    await world.start_bot()
    told = await world.discord.wait_for_message(world.channel, lambda m: "the answer is 42" in m["content"])
    await world.quiescent()

    assert told["content"] == f"<@{world.alice.id}> Good news: the answer is 42."
    assert templates(world) == []
    assert world.rows("SELECT kind, status FROM runs ORDER BY created_at")[-1] == ("chat", "completed")
    await stays(
        lambda: [m for m in world.bot_messages() if "42" in m["content"]] == [told],
        for_seconds=1,
        describe="the telling posted once",
    )


async def test_a_voice_turn_over_the_members_budget_leaves_the_result_announced_as_it_is(world):
    world.extra_config = "[budgets]\nmember_runs_per_hour = 2\n"  # the mention's turn and its sub-agent
    agent = MainAgent(world)
    await world.start_bot()

    await mention(world, "please research the answer")
    [child] = await eventually_children(world, 1)
    announced = await world.discord.wait_for_message(world.channel, announcement_for(short_run_id(child)))
    await world.quiescent()

    assert "Found 12." in announced["content"] and agent.voiced == []
    assert [row[0] for row in world.rows("SELECT kind FROM runs ORDER BY created_at")] == ["chat", "spawn"]


async def test_a_conversation_in_a_thread_is_told_in_that_thread(world):
    MainAgent(world)
    bob = member(world, "bob")
    side = world.discord.add_thread(world.channel, "side talk", owner=bob)
    await world.start_bot()

    await mention(world, "please research the answer", user=bob, channel=side)
    told = await world.discord.wait_for_message(side, lambda m: "the answer is 42" in m["content"])
    await world.quiescent()

    assert told["content"] == f"<@{bob.id}> Good news: the answer is 42."
    assert world.bot_messages() == []  # nothing in the parent channel
    assert world.rows("SELECT channel_id FROM runs WHERE kind = 'chat' ORDER BY created_at") == [(side.id,), (side.id,)]


async def test_the_files_its_sub_agents_attached_go_with_the_main_agents_telling(world):
    agent = MainAgent(world, tasks=("dig one", "dig two"))
    agent.hold_main.clear()
    default = agent.answer
    attached: set[str] = set()

    async def with_files(body: dict):
        system = json.dumps(body["messages"][0])
        if "[Subagent Context]" in system:  # each sub-agent attaches its report, then answers
            task = "one" if "dig one" in json.dumps(body["messages"]) else "two"
            if task in attached:
                return "Found 12."
            attached.add(task)
            return Step.calls([("attach_file", {"name": "report.md", "content": f"report {task}\n"})])
        return await default(body)

    world.llm.default = with_files
    await world.start_bot()
    asked = await world.discord.send_user_message(
        world.alice, world.channel, f"<@{world.discord.bot_user_id}> please research both"
    )
    await world.until("SELECT status FROM runs WHERE kind = 'spawn'", [("completed",), ("completed",)], timeout=10)
    agent.hold_main.set()
    await world.discord.wait_for_message(world.channel, answer_to(asked))
    told = await world.discord.wait_for_message(world.channel, lambda m: "the answer is 42" in m["content"])
    await world.quiescent()

    posted = dict(world.discord.message_files(told))  # both named report.md: the second is posted as report-2.md
    assert sorted(posted) == ["report-2.md", "report.md"]
    assert sorted(posted.values()) == [b"report one\n", b"report two\n"]
    assert templates(world) == []
