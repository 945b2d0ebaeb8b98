"""Traces over the wire: the real bot exports OTLP/HTTP to a fake collector, one trace per run execution.

The run's span holds pydantic-ai's spans (each model request, the tool call) and DBOS's (its workflow above, its
steps below); off by default, nothing is built and nothing is sent.
"""

from __future__ import annotations

import time

import pytest
from dbos._tracer import dbos_tracer  # DBOS's tracing switch: not re-exported
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from bot.tracing import RELAY
from tests.fakes.otlp_collector import FakeCollector, ReceivedSpan
from tests.harness import API_KEY, announcement_for, answer_to, spawned_run_id
from tests.test_wire_chat import replies_to
from tests.test_wire_control import member, spawn
from tests.test_wire_threads import THREADS_ON, spawn_into_thread

TASK = "Summarise the plan for Zanzibar"  # a member's words: never in a span unless include_content is on


@pytest.fixture
async def collector(monkeypatch):
    fake = FakeCollector()
    await fake.start()
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # the batch goes out every 50 ms, not every 5 s
    yield fake
    await fake.stop()


def traced(world, collector, **keys) -> None:
    lines = "".join(f"{key} = {value}\n" for key, value in keys.items())
    world.extra_config = f'[tracing]\notlp_endpoint = "{collector.endpoint}"\n{lines}'


async def run_spans(collector: FakeCollector, run_id: str, count: int = 1) -> list[ReceivedSpan]:
    """The spans of ``run_id``'s executions, once ``count`` of them arrived."""

    def found():
        spans = [s for s in collector.named("threadbound.run") if s.attributes.get("threadbound.run_id") == run_id]
        return spans if len(spans) >= count else None

    return await collector.wait_for(found, describe=f"{count} span(s) of run {run_id}")


async def run_span(collector: FakeCollector, run_id: str) -> ReceivedSpan:
    return (await run_spans(collector, run_id))[0]


def full_run_id(world, prefix: str) -> str:
    [(run_id,)] = world.rows("SELECT id FROM runs WHERE id LIKE ?", (prefix + "%",))
    return run_id


def attaching(world) -> None:
    """The sub-agent's model calls a tool (attach_file), then answers."""
    world.llm.tool_call("attach_file", {"name": "plan.md", "content": "Zanzibar: three steps"})
    world.llm.reply("the plan has three steps")


async def test_a_runs_trace_holds_its_model_requests_and_tool_call_with_its_ids(world, collector):
    traced(world, collector)
    attaching(world)
    bot = await world.start_bot()

    run_id = full_run_id(world, await spawn(world, task=TASK))
    await world.discord.wait_for_message(world.channel, announcement_for(run_id[:8]))
    span = await run_span(collector, run_id)
    await world.stop_bot(bot)  # what is still batched is sent at close

    [(session_key, depth)] = world.rows(
        "SELECT s.key, s.depth FROM runs r JOIN sessions s ON s.key = r.session_key WHERE r.id = ?", (run_id,)
    )
    assert span.attributes == {
        "threadbound.run_id": run_id,
        "threadbound.session_key": session_key,
        "threadbound.agent_id": "researcher",
        "threadbound.depth": depth,
        "threadbound.woken": False,
        "threadbound.requester_session_key": f"agent:main:discord:channel:{world.channel.id}",
        "threadbound.status": "completed",
    }
    assert span.service == "threadbound" and not span.error
    below = collector.under(span)
    names = [s.name for s in below if s.scope != "dbos-tracer"]
    assert names.count("invoke_agent agent") == 1
    assert names.count("chat gpt-4o-mini") == 2  # the request that called the tool, the one that answered
    assert names.count("execute_tool attach_file") == 1
    assert [s.name for s in below if s.scope == "dbos-tracer"] == ["model.request", "model.request"]  # its steps
    # DBOS's workflow span is the trace's root, the run's span its child: everything of the run is one trace
    [root] = [s for s in collector.of_trace(span.trace_id) if not s.parent_id]
    assert (root.scope, root.name, root.attributes["operationUUID"]) == ("dbos-tracer", "threadbound.run", run_id)
    assert span.parent_id == root.span_id
    whole = {s.span_id for s in collector.of_trace(span.trace_id)}
    assert whole == {root.span_id, span.span_id, *(s.span_id for s in below)}
    # members' words and the provider's key never reach the collector
    sent = collector.received()
    assert API_KEY.encode() not in sent
    assert b"Zanzibar" not in sent and b"three steps" not in sent
    assert b"You research things" not in sent  # the agent's instructions neither


async def test_each_run_is_a_trace_of_its_own_for_each_member_server_and_after_a_restart(world, collector):
    traced(world, collector)
    world.guild_commands = False  # the commands are global: another server has them too
    bob = member(world, "bob")
    elsewhere = world.discord.add_guild("Elsewhere")
    theirs = world.discord.add_text_channel(elsewhere, "theirs")
    carol = world.discord.add_user("carol")
    world.discord.add_member(elsewhere, carol)
    attaching(world)
    world.llm.reply("bob's answer")
    world.llm.reply("carol's answer")
    bot = await world.start_bot()

    alices = full_run_id(world, await spawn(world, task=TASK))
    await world.discord.wait_for_message(world.channel, announcement_for(alices[:8]))
    bobs = full_run_id(world, await spawn(world, user=bob, task="Count the Zanzibar birds"))
    await world.discord.wait_for_message(world.channel, announcement_for(bobs[:8]))
    alice_span, bob_span = await run_span(collector, alices), await run_span(collector, bobs)
    assert alice_span.trace_id != bob_span.trace_id
    assert alice_span.attributes["threadbound.session_key"] != bob_span.attributes["threadbound.session_key"]
    assert {s.trace_id for s in collector.under(bob_span)} == {bob_span.trace_id}

    inter = await world.discord.slash(carol, theirs, "subagents spawn", agent="researcher", task="Elsewhere's plan")
    carols = full_run_id(world, spawned_run_id(await world.discord.wait_followup(inter, timeout=40)))
    carol_span = await run_span(collector, carols)  # another server's run: its own trace, naming its own channel
    assert carol_span.trace_id not in {alice_span.trace_id, bob_span.trace_id}
    requester = f"agent:main:discord:channel:{theirs.id}"
    assert carol_span.attributes["threadbound.requester_session_key"] == requester
    await world.quiescent()

    await world.stop_bot(bot)
    world.llm.reply("hello again")
    await world.start_bot()
    asked = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> hi")
    await world.discord.wait_for_message(world.channel, replies_to(world, asked))
    [(main_run,)] = world.rows("SELECT id FROM runs WHERE id NOT IN (?, ?, ?)", (alices, bobs, carols))
    main_span = await run_span(collector, main_run)  # the new process traces too: to the same collector
    assert main_span.attributes["threadbound.agent_id"] == "main"
    assert main_span.attributes["threadbound.depth"] == 0
    assert "threadbound.requester_session_key" not in main_span.attributes
    assert main_span.trace_id not in {alice_span.trace_id, bob_span.trace_id}
    await collector.wait_for(
        lambda: any(s.name == "chat gpt-4o-mini" for s in collector.under(main_span)),
        describe="the main run's model request under its span",
    )


async def test_content_is_in_the_spans_only_when_the_config_lets_it(world, collector):
    traced(world, collector, include_content="true", service_name='"tb-staging"')
    attaching(world)
    await world.start_bot()

    run_id = full_run_id(world, await spawn(world, task=TASK))
    span = await run_span(collector, run_id)
    assert span.service == "tb-staging"
    await collector.wait_for(lambda: b"Zanzibar" in collector.received(), describe="the task's words in a span")
    assert API_KEY.encode() not in collector.received()


async def test_off_by_default_nothing_is_built_or_sent(world, collector, monkeypatch):
    # even with the SDK's own endpoint variable pointing at the collector, nothing is set up to send there
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    attaching(world)
    await world.start_bot()

    run_id = await spawn(world, task=TASK)
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert RELAY.active is None
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)
    assert dbos_tracer.disable_otlp
    assert trace.get_current_span().get_span_context().is_valid is False
    await world.quiescent()
    assert collector.bodies == []


async def test_a_subagent_an_agent_spawns_is_a_trace_of_its_own_naming_its_requester(world, collector):
    traced(world, collector)
    world.llm.tool_call("spawn_subagent", {"prompt": "Check that 6 x 7 is 42"})
    world.llm.reply("Checked: 6 x 7 is 42.")
    world.llm.reply("My sub-agent confirms it: 42.")
    await world.start_bot()

    asked = await world.discord.send_user_message(world.alice, world.channel, f"<@{world.discord.bot_user_id}> 42?")
    await world.discord.wait_for_message(world.channel, replies_to(world, asked))
    [(main_run, main_key), (child_run, child_key)] = world.rows("SELECT id, session_key FROM runs ORDER BY created_at")
    main_span, child_span = await run_span(collector, main_run), await run_span(collector, child_run)
    assert main_span.trace_id != child_span.trace_id
    assert child_span.attributes["threadbound.session_key"] == child_key
    assert child_span.attributes["threadbound.requester_session_key"] == main_key
    assert child_span.attributes["threadbound.depth"] == 1
    await collector.wait_for(
        lambda: any(s.name == "execute_tool spawn_subagent" for s in collector.under(main_span)),
        describe="the spawn's tool call under the main run's span",
    )


async def test_a_collector_that_is_down_neither_fails_runs_nor_holds_the_close_up(world, collector):
    traced(world, collector)
    await collector.stop()  # nothing listens there any more
    attaching(world)
    bot = await world.start_bot()

    run_id = await spawn(world, task=TASK)
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "completed successfully" in announcement["content"]
    started = time.monotonic()
    await world.stop_bot(bot)
    assert time.monotonic() - started < 5


async def test_a_run_resumed_after_a_restart_is_a_new_trace_of_the_same_run(world, collector):
    traced(world, collector)
    world.llm.hang()
    world.llm.reply("resumed and done")
    bot = await world.start_bot()
    run_id = full_run_id(world, await spawn(world, task=TASK))
    await world.llm.wait_hanging(1)
    await world.stop_bot(bot)  # the run stays live: its workflow resumes at the next start
    cut = await run_span(collector, run_id)  # sent at the close

    await world.start_bot()
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id[:8]))
    assert "resumed and done" in announcement["content"]
    spans = await run_spans(collector, run_id, count=2)
    resumed = next(s for s in spans if s.span_id != cut.span_id)
    assert resumed.attributes["threadbound.run_id"] == run_id
    assert resumed.trace_id != cut.trace_id
    assert any(s.name == "chat gpt-4o-mini" for s in collector.under(resumed))


async def test_without_durable_runs_the_runs_span_is_the_traces_root(world, collector):
    traced(world, collector)
    world.extra_config += "[durability]\nresume_interrupted = false\n"
    attaching(world)
    await world.start_bot()

    run_id = full_run_id(world, await spawn(world, task=TASK))
    span = await run_span(collector, run_id)
    assert span.parent_id == ""
    await collector.wait_for(
        lambda: {"chat gpt-4o-mini", "execute_tool attach_file"} <= {s.name for s in collector.under(span)},
        describe="the model requests and the tool call under the run's span",
    )
    assert not [s for s in collector.of_trace(span.trace_id) if s.scope == "dbos-tracer"]


async def test_a_follow_up_in_a_bound_thread_is_its_own_trace_of_the_same_session(world, collector):
    traced(world, collector)
    world.extra_config += THREADS_ON
    world.llm.reply("Market is growing.")
    world.llm.reply("Europe too.")
    await world.start_bot()
    first, thread = await spawn_into_thread(world)
    first = full_run_id(world, first)
    await world.discord.wait_for_message(thread, announcement_for(first[:8]))

    question = await world.discord.send_user_message(world.alice, thread, "And in Europe?")
    await world.discord.wait_for_message(thread, answer_to(question))
    [(second,)] = world.rows("SELECT id FROM runs WHERE id != ?", (first,))
    first_span, second_span = await run_span(collector, first), await run_span(collector, second)
    assert first_span.trace_id != second_span.trace_id
    key = first_span.attributes["threadbound.session_key"]
    assert second_span.attributes["threadbound.session_key"] == key
    assert world.rows("SELECT DISTINCT session_key FROM runs") == [(key,)]
    assert b"Europe" not in collector.received()


async def test_a_failed_run_is_a_span_of_an_error_saying_its_status(world, collector):
    traced(world, collector)
    world.llm.error(500, "upstream exploded")
    world.llm.error(500, "upstream exploded")  # the SDK retries once
    await world.start_bot()

    run_id = full_run_id(world, await spawn(world, task=TASK))
    await world.discord.wait_for_message(world.channel, announcement_for(run_id[:8]))
    span = await run_span(collector, run_id)
    assert world.rows("SELECT status FROM runs") == [("failed",)]
    assert (span.attributes["threadbound.status"], span.error) == ("failed", True)
