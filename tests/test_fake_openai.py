"""The real pydantic-ai + openai SDK stack against tests/fakes/openai_server.py.

These pin down both the fake (so other tests can trust it) and the wire behaviour the bot relies on:
usage accounting, tool round-trips, SSE, HTTP error mapping and run timeouts tearing down the request.
"""

from __future__ import annotations

import asyncio
import time

import pytest
import pytest_asyncio
from openai import AsyncOpenAI, InternalServerError, NotFoundError
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError, RunTimedOut
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from tests.fakes.openai_server import SERVED_MODELS, FakeOpenAI, Step
from tests.polling import eventually

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def fake():
    async with FakeOpenAI() as server:
        yield server


async def test_text_reply_and_usage(fake: FakeOpenAI):
    fake.reply("final text", prompt_tokens=1000, completion_tokens=200)
    # Spelled out once, as the bot builds it; the other tests use the `fake.model()` shortcut.
    async with AsyncOpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0) as client:
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
        result = await Agent(model).run("hello")

    assert result.output == "final text"
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.requests) == (1000, 200, 1)
    req = fake.requests[0]
    assert req["model"] == "gpt-4o-mini" and req["stream"] is False
    assert req["messages"][-1] == {"role": "user", "content": "hello"}
    assert req["headers"]["authorization"] == "Bearer sk-test"
    assert not fake.pending


async def test_tool_call_then_answer(fake: FakeOpenAI):
    agent = Agent(fake.model())
    seen = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        seen.append(city)
        return f"sunny in {city}"

    fake.tool_call("get_weather", {"city": "Paris"}, prompt_tokens=50, completion_tokens=5)
    fake.reply("It is sunny.", prompt_tokens=70, completion_tokens=4)
    result = await agent.run("weather?")

    assert result.output == "It is sunny." and seen == ["Paris"]
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.tool_calls) == (120, 9, 1)
    assert fake.requests[0]["body"]["tools"][0]["function"]["name"] == "get_weather"
    tool_msg = fake.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_0_0"
    assert "sunny in Paris" in tool_msg["content"]


async def test_parallel_tool_calls(fake: FakeOpenAI):
    agent = Agent(fake.model())

    @agent.tool_plain
    def double(x: int) -> int:
        return 2 * x

    fake.tool_calls([("double", {"x": 1}), ("double", {"x": 5})])
    fake.respond_with(lambda body: ",".join(m["content"] for m in body["messages"] if m["role"] == "tool"))
    assert (await agent.run("go")).output == "2,10"


async def test_streaming(fake: FakeOpenAI):
    fake.reply("streamed words arrive in pieces", prompt_tokens=30, completion_tokens=6)
    async with Agent(fake.model()).run_stream("hi") as stream:
        deltas = [d async for d in stream.stream_text(delta=True, debounce_by=None)]
        usage = stream.usage
    assert "".join(deltas) == "streamed words arrive in pieces" and len(deltas) > 1
    assert (usage.input_tokens, usage.output_tokens) == (30, 6)
    body = fake.requests[0]["body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_streaming_tool_call(fake: FakeOpenAI):
    agent = Agent(fake.model())

    @agent.tool_plain
    def echo(text: str) -> str:
        return text.upper()

    fake.tool_call("echo", {"text": "abc"})
    fake.respond_with(lambda body: body["messages"][-1]["content"])
    async with agent.run_stream("go") as stream:
        assert await stream.get_output() == "ABC"


@pytest.mark.parametrize("status", [500, 401, 429])
async def test_http_error(fake: FakeOpenAI, status: int):
    fake.error(status, "boom")
    with pytest.raises(ModelHTTPError) as exc_info:
        await Agent(fake.model()).run("hi")
    assert exc_info.value.status_code == status
    assert exc_info.value.body["message"] == "boom"
    assert len(fake.requests) == 1  # max_retries=0: no hidden SDK retry


async def test_an_error_may_echo_the_key_it_was_sent_with(fake: FakeOpenAI):
    fake.error(403, "invalid key {api_key}")
    with pytest.raises(ModelHTTPError) as exc_info:
        await Agent(fake.model()).run("hi")
    assert exc_info.value.status_code == 403
    assert exc_info.value.body["message"] == "invalid key sk-test"  # the key fake.client() sends


async def test_error_reaches_raw_sdk(fake: FakeOpenAI):
    fake.error(500, "boom")
    with pytest.raises(InternalServerError) as exc_info:
        await fake.client().chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert exc_info.value.body == {"message": "boom", "type": "server_error", "param": None, "code": None}


async def test_hang_times_out_and_disconnects(fake: FakeOpenAI):
    fake.hang()
    start = time.monotonic()
    with pytest.raises(RunTimedOut):
        await Agent(fake.model()).run("hi", timeout=0.3)
    assert time.monotonic() - start < 1.5
    await fake.wait_hanging(0)  # the timeout closed the socket, which cancelled the parked handler
    assert fake.requests[0]["disconnected"] is True


async def test_hang_kill_in_flight_then_release(fake: FakeOpenAI):
    fake.hang(then=Step.reply("late answer"))
    task = asyncio.create_task(Agent(fake.model()).run("hi"))
    await fake.wait_for_request(1)
    await fake.wait_hanging(1)
    assert not task.done()
    fake.release()
    assert (await task).output == "late answer"


async def test_stop_with_hanging_request_is_prompt():
    fake = await FakeOpenAI().start()
    fake.hang()
    task = asyncio.create_task(Agent(fake.model()).run("hi"))
    await fake.wait_hanging(1)
    start = time.monotonic()
    await fake.stop()
    assert time.monotonic() - start < 1.0
    with pytest.raises(ModelHTTPError) as exc_info:  # released with a 503 before the socket closes
        await task
    assert exc_info.value.status_code == 503


async def test_cancel_mid_stream_disconnects(fake: FakeOpenAI):
    fake.reply("a b c d e f g h", chunk_delay=0.05)
    got = []

    async def consume():
        async with Agent(fake.model()).run_stream("x") as stream:
            async for text in stream.stream_text(debounce_by=None):
                got.append(text)

    task = asyncio.create_task(consume())
    await fake.wait_for_request(1)
    await eventually(lambda: got, timeout=5, describe="the first streamed text")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await eventually(
        lambda: fake.requests[0]["disconnected"], timeout=5, describe="the server to see the client disconnect"
    )
    assert got and got[-1] != "a b c d e f g h"
    assert fake.requests[0]["disconnected"] is True


async def test_respond_with_sees_history(fake: FakeOpenAI):
    agent = Agent(fake.model(), instructions="be brief")
    fake.reply("first answer")
    fake.respond_with(lambda body: f"saw {[m['role'] for m in body['messages']]}")
    first = await agent.run("one")
    second = await agent.run("two", message_history=first.all_messages())
    assert second.output == "saw ['system', 'user', 'assistant', 'user']"
    assert fake.requests[1]["messages"][2] == {"role": "assistant", "content": "first answer"}


async def test_async_responder_and_default(fake: FakeOpenAI):
    async def responder(body):
        await asyncio.sleep(0)
        return Step.reply("from async", completion_tokens=42)

    fake.respond_with(responder)
    agent = Agent(fake.model())
    assert (await agent.run("a")).usage.output_tokens == 42
    assert (await agent.run("b")).output == "ok"  # script exhausted -> deterministic default
    fake.default = lambda body: "echo: " + body["messages"][-1]["content"]
    assert (await agent.run("c")).output == "echo: c"
    fake.default = None
    with pytest.raises(ModelHTTPError, match="fake script exhausted"):
        await agent.run("d")


async def test_model_restricted_steps(fake: FakeOpenAI):
    fake.reply("for big", model="gpt-4o")
    fake.reply("for anyone")
    small, big = Agent(fake.model("gpt-4o-mini")), Agent(fake.model("gpt-4o"))
    # The small model skips the step reserved for gpt-4o and takes the unrestricted one.
    assert (await small.run("x")).output == "for anyone"
    assert (await big.run("x")).output == "for big"
    assert [r["model"] for r in fake.requests] == ["gpt-4o-mini", "gpt-4o"]


async def test_concurrent_runs_each_get_one_step(fake: FakeOpenAI):
    for i in range(5):
        fake.reply(f"r{i}")
    agent = Agent(fake.model())
    outputs = await asyncio.gather(*(agent.run(f"q{i}") for i in range(5)))
    assert sorted(r.output for r in outputs) == [f"r{i}" for i in range(5)]


async def test_models_endpoint_lists_what_is_served_or_answers_404(fake: FakeOpenAI):
    page = await fake.client().models.list()
    assert [m.id for m in page.data] == list(SERVED_MODELS)
    assert {"gpt-4o-mini", "local-llama"} <= set(SERVED_MODELS)  # every model name the wire tests use
    fake.served_models = ["gpt-4o"]
    fake.reply("x", model="scripted-only")  # scripting a model does not make the server serve it
    assert [m.id async for m in fake.client().models.list()] == ["gpt-4o"]
    fake.served_models = None
    with pytest.raises(NotFoundError):
        await fake.client().models.list()
    assert fake.model_list_requests == 3
