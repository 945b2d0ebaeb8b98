"""Loopback fake of the OpenAI chat-completions API, for provider-wiring tests.

Why a real HTTP server: `FunctionModel` covers agent logic, but only a socket exercises the path the bot
really uses (openai SDK -> httpx2 -> pydantic-ai `OpenAIChatModel`): request shape, SSE parsing, HTTP error
mapping to `ModelHTTPError`, and timeouts/kills tearing down an in-flight request. The SDKs use httpx2, so
respx-style transport mocks do not intercept them. aiohttp already ships with discord.py: no extra dependency.

Usage::

    async with FakeOpenAI() as fake:          # or: fake = FakeOpenAI(); await fake.start(); ...; await fake.stop()
        fake.reply("hi", prompt_tokens=1000, completion_tokens=200)
        fake.tool_call("get_weather", {"city": "Paris"})
        fake.error(429, "slow down", model="gpt-4o-mini")
        agent = Agent(fake.model("gpt-4o-mini"))

Scripting rules:

* Steps are answered in FIFO order. A step with ``model=`` only answers requests for that exact model name
  (later unrestricted steps may be consumed first by other models); ``model=None`` answers any model.
* When no step matches, ``fake.default`` decides: a ``str`` is replied as text (default ``"ok"``, so a test
  that does not care about the model's words needs no script), a callable works like ``respond_with``, and
  ``None`` returns HTTP 500 "fake script exhausted" (strict mode).
* A ``hang`` step parks the request until ``release()``; then it answers with its ``then`` step, or else the
  next matching script step / default. A client disconnect (run timeout, kill) cancels it, and ``stop()``
  ends it with a 503, so shutdown never blocks.

An error step's message may hold ``{api_key}``: it is answered with the key the request was sent with (its
``Authorization: Bearer`` value), as an OpenAI-compatible proxy or local server that echoes a key it refuses does::

    fake.error(403, "invalid key {api_key}")  # body: {"error": {"message": "invalid key sk-...", ...}}

``GET /v1/models`` lists ``fake.served_models`` (by default ``SERVED_MODELS``, which holds every model name the
tests use), as a real server lists what it serves whatever was asked; ``served_models = None`` makes it answer
404, like a server without a model list. ``fake.model_list_requests`` counts the requests it got.

Everything runs on the test's event loop. Picking and popping a step has no ``await`` in between, so it is
atomic for concurrent requests without a lock; call the scripting methods from that loop's thread.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from aiohttp import web

from tests.polling import eventually

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel

__all__ = ["SERVED_MODELS", "FakeOpenAI", "Responder", "Step", "ToolCallSpec"]

ToolCallSpec = tuple[str, dict[str, Any] | str] | tuple[str, dict[str, Any] | str, str]
"""``(name, args)`` or ``(name, args, call_id)``. Dict args are JSON-encoded; a str is sent verbatim (e.g. bad JSON)."""

Responder = Callable[[dict[str, Any]], "Step | str | Awaitable[Step | str]"]
"""Gets the parsed request body; returns a Step (or plain text) for this one request. May be async."""

# status -> (error.type, error.code), as the real API sends them, so pydantic-ai picks the same error category.
_ERROR_SHAPES: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}

SERVED_MODELS = ("gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "local-llama", "o3", "o4-mini")


@dataclass
class Step:
    """One scripted answer. Build with the classmethods; ``FakeOpenAI.reply()`` etc. build and enqueue."""

    kind: Literal["reply", "error", "hang", "dynamic"]
    text: str | None = None
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    prompt_tokens: int = 10
    completion_tokens: int = 5
    finish_reason: str | None = None
    status: int = 200
    error_type: str | None = None
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    then: Step | None = None
    fn: Responder | None = None
    model: str | None = None
    delay: float = 0.0
    """Seconds to wait before answering (all kinds except hang)."""
    chunk_delay: float = 0.0
    """Seconds between SSE chunks, to make a stream slow enough to kill mid-way."""

    @classmethod
    def reply(cls, text: str | None, *, tool_calls: Sequence[ToolCallSpec] = (), **kw: Any) -> Step:
        return cls("reply", text=text, tool_calls=list(tool_calls), **kw)

    @classmethod
    def calls(cls, calls: Sequence[ToolCallSpec], *, text: str | None = None, **kw: Any) -> Step:
        return cls("reply", text=text, tool_calls=list(calls), **kw)

    @classmethod
    def error(cls, status: int, message: str, *, type: str | None = None, code: str | None = None, **kw: Any) -> Step:
        d_type, d_code = _ERROR_SHAPES.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
        return cls("error", text=message, status=status, error_type=type or d_type, error_code=code or d_code, **kw)

    @classmethod
    def hang(cls, *, then: Step | None = None, **kw: Any) -> Step:
        return cls("hang", then=then, **kw)

    @classmethod
    def dynamic(cls, fn: Responder, **kw: Any) -> Step:
        return cls("dynamic", fn=fn, **kw)


class FakeOpenAI:
    """Scripted OpenAI-compatible server on 127.0.0.1:<random port>. See the module docstring for the rules."""

    def __init__(
        self, *, default: str | Responder | None = "ok", served_models: Sequence[str] | None = SERVED_MODELS
    ) -> None:
        self.default = default
        self.served_models = served_models
        """What ``GET /v1/models`` lists, in this order; ``None``: it answers 404 (no model list)."""
        self.model_list_requests = 0
        self.requests: list[dict[str, Any]] = []
        """Chat-completion requests in arrival order: ``index, body, headers`` (lowercased keys), ``model``,
        ``messages``, ``stream``, ``disconnected`` (True if the client went away before the answer), ``at`` (when it
        arrived, epoch seconds), ``images`` (the ``image_url`` parts of its user messages' content lists, in order) and
        ``user_texts`` (every user message's text: a content list's text parts joined by a blank line)."""
        self.hanging = 0
        """Requests currently parked by a hang step."""
        self.base_url = ""
        self._script: list[Step] = []
        self._runner: web.AppRunner | None = None
        self._release = asyncio.Event()
        self._changed = asyncio.Event()
        self._closing = False
        self._clients: list[AsyncOpenAI] = []

    # ---- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        # handler_cancellation: a client that disconnects (timeout/kill) cancels its handler, like a real server
        # would stop generating. shutdown_timeout only bounds stop() if something unexpected is still running.
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=2.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def stop(self) -> None:
        """Close clients made by ``client()``/``model()``, end hanging requests (503), and shut the server."""
        self._closing = True
        self.release()
        if self._runner is not None:
            await self._runner.cleanup()  # waits (bounded) for the released handlers to send their 503
            self._runner = None
        for client in self._clients:
            await client.close()
        self._clients.clear()

    async def __aenter__(self) -> FakeOpenAI:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- client helpers --------------------------------------------------------------------------------------

    def client(self, **kw: Any) -> AsyncOpenAI:
        """An ``AsyncOpenAI`` pointed here, ``max_retries=0`` (SDK retries would re-consume script steps)."""
        from openai import AsyncOpenAI

        client = AsyncOpenAI(**{"base_url": self.base_url, "api_key": "sk-test", "max_retries": 0, **kw})
        self._clients.append(client)
        return client

    def model(self, name: str = "gpt-4o-mini", **kw: Any) -> OpenAIChatModel:
        """A real pydantic-ai ``OpenAIChatModel`` talking to this server."""
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=self.client()), **kw)

    # ---- scripting -------------------------------------------------------------------------------------------

    def enqueue(self, *steps: Step) -> None:
        self._script.extend(steps)

    def reply(self, text: str, *, prompt_tokens: int = 10, completion_tokens: int = 5, **kw: Any) -> Step:
        step = Step.reply(text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, **kw)
        self.enqueue(step)
        return step

    def tool_call(self, name: str, args: dict[str, Any] | str | None = None, **kw: Any) -> Step:
        return self.tool_calls([(name, {} if args is None else args)], **kw)

    def tool_calls(self, calls: Sequence[ToolCallSpec], **kw: Any) -> Step:
        step = Step.calls(calls, **kw)
        self.enqueue(step)
        return step

    def error(self, status: int, message: str, **kw: Any) -> Step:
        step = Step.error(status, message, **kw)
        self.enqueue(step)
        return step

    def hang(self, **kw: Any) -> Step:
        step = Step.hang(**kw)
        self.enqueue(step)
        return step

    def respond_with(self, fn: Responder, **kw: Any) -> Step:
        """One dynamic step. For a dynamic answer to *every* unscripted request, set ``fake.default = fn``."""
        step = Step.dynamic(fn, **kw)
        self.enqueue(step)
        return step

    @property
    def pending(self) -> list[Step]:
        """Steps not consumed yet (assert ``not fake.pending`` to check a script ran fully)."""
        return list(self._script)

    def release(self) -> None:
        """Let every currently hanging request continue."""
        self._release.set()
        self._release = asyncio.Event()

    # ---- waiting ---------------------------------------------------------------------------------------------

    async def wait_for_request(self, n: int = 1, timeout: float = 5) -> dict[str, Any]:
        """Wait until the n-th chat request (1-based) has arrived and return its record."""
        await eventually(
            lambda: len(self.requests) >= n,
            timeout=timeout,
            describe=lambda: f"{len(self.requests)} chat request(s) arrived, waited for the {n}th",
            changed=self._next_change,
        )
        return self.requests[n - 1]

    async def wait_hanging(self, n: int = 1, timeout: float = 5) -> None:
        """Wait until exactly n requests are parked (n=0: all hung requests ended, e.g. the client went away)."""
        await eventually(
            lambda: self.hanging == n,
            timeout=timeout,
            describe=lambda: f"{self.hanging} chat request(s) hanging, waited for exactly {n}",
            changed=self._next_change,
        )

    def _next_change(self) -> asyncio.Event:
        """The event the next change (a request arriving, parking or ending) sets."""
        return self._changed

    def _notify(self) -> None:
        # Swap-and-set instead of asyncio.Condition: it is synchronous, so it also works in a cancelled handler's
        # `finally`, where awaiting a lock is not possible.
        self._changed.set()
        self._changed = asyncio.Event()

    # ---- handlers --------------------------------------------------------------------------------------------

    async def _models(self, request: web.Request) -> web.Response:
        self.model_list_requests += 1
        if self.served_models is None:
            raise web.HTTPNotFound()  # the plain 404 of a server that has no such route
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "fake"} for n in self.served_models]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return _error_response(Step.error(400, "request body is not JSON"))
        model = str(body.get("model", ""))
        rec = {
            "index": len(self.requests),
            "body": body,
            "headers": {k.lower(): v for k, v in request.headers.items()},
            "model": model,
            "messages": body.get("messages", []),
            "stream": bool(body.get("stream")),
            "disconnected": False,
            "at": time.time(),
            "images": [part["image_url"]["url"] for part in _user_parts(body) if part.get("type") == "image_url"],
            "user_texts": _user_texts(body),
        }
        self.requests.append(rec)
        self._notify()
        try:
            step = await self._resolve(self._take(model), body)
            while step.kind == "hang":
                step = await self._resolve(await self._park(step, model), body)
            if step.delay:
                await asyncio.sleep(step.delay)
            rec["answered_at"] = time.time()
            if step.kind == "error":
                return _error_response(step, _api_key(request))
            if rec["stream"]:
                streamed = await self._stream(request, body, step, rec["index"])
                rec["last_token_at"] = time.monotonic()  # monotonic, like the fake Discord's clock
                return streamed
            rec["last_token_at"] = time.monotonic()
            return web.json_response(_completion(body, step, rec["index"]))
        except asyncio.CancelledError:
            rec["disconnected"] = True
            self._notify()
            raise

    def _take(self, model: str) -> Step:
        for i, step in enumerate(self._script):
            if step.model is None or step.model == model:
                return self._script.pop(i)
        if isinstance(self.default, str):
            return Step.reply(self.default)
        if self.default is not None:
            return Step.dynamic(self.default)
        return Step.error(500, f"fake script exhausted (no step for model {model!r})")

    async def _resolve(self, step: Step, body: dict[str, Any]) -> Step:
        while step.kind == "dynamic":
            assert step.fn is not None
            out = step.fn(body)
            if inspect.isawaitable(out):
                out = await out
            step = Step.reply(out) if isinstance(out, str) else out
        return step

    async def _park(self, step: Step, model: str) -> Step:
        if self._closing:
            return Step.error(503, "fake server stopping")
        released = self._release
        self.hanging += 1
        self._notify()
        try:
            await released.wait()
        finally:
            self.hanging -= 1
            self._notify()
        if self._closing:
            return Step.error(503, "fake server stopping")
        return step.then or self._take(model)

    async def _stream(self, request: web.Request, body: dict[str, Any], step: Step, index: int) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        base = {
            "id": f"chatcmpl-fake-{index}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", ""),
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        chunks = [chunk({"role": "assistant", "content": ""})]
        if step.text:  # word-sized deltas, so the client really has to assemble the text
            chunks += [chunk({"content": piece}) for piece in re.findall(r"\s*\S+\s*", step.text) or [step.text]]
        for i, call in enumerate(_tool_calls(step, index)):
            args = call["function"]["arguments"]
            head = {
                "index": i,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            tail = {"index": i, "function": {"arguments": args}}
            chunks += [chunk({"tool_calls": [head]}), chunk({"tool_calls": [tail]})]
        chunks.append(chunk({}, _finish(step)))
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": _usage(step)})
        for data in chunks:
            await resp.write(f"data: {json.dumps(data)}\n\n".encode())
            if step.chunk_delay:
                await asyncio.sleep(step.chunk_delay)
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


def _user_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of user messages whose content is a list (text, image_url, ...), as real clients send them."""
    return [
        part
        for message in body.get("messages", [])
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for part in message["content"]
    ]


def _user_texts(body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "\n\n".join(part.get("text", "") for part in content if part.get("type") == "text")
        texts.append(content)
    return texts


def _tool_calls(step: Step, index: int) -> list[dict[str, Any]]:
    out = []
    for i, spec in enumerate(step.tool_calls):
        name, args = spec[0], spec[1]
        call_id = spec[2] if len(spec) > 2 else f"call_{index}_{i}"  # deterministic ids for assertions
        out.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
        )
    return out


def _finish(step: Step) -> str:
    return step.finish_reason or ("tool_calls" if step.tool_calls else "stop")


def _usage(step: Step) -> dict[str, int]:
    return {
        "prompt_tokens": step.prompt_tokens,
        "completion_tokens": step.completion_tokens,
        "total_tokens": step.prompt_tokens + step.completion_tokens,
    }


def _completion(body: dict[str, Any], step: Step, index: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text}
    if step.tool_calls:
        message["tool_calls"] = _tool_calls(step, index)
    return {
        "id": f"chatcmpl-fake-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "usage": _usage(step),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(step)}],
    }


def _api_key(request: web.Request) -> str:
    """The key a request was sent with (what a proxy that echoes it would say)."""
    return request.headers.get("Authorization", "").removeprefix("Bearer ")


def _error_response(step: Step, api_key: str = "") -> web.Response:
    message = step.text.replace("{api_key}", api_key) if step.text else step.text
    error = {"message": message, "type": step.error_type, "param": None, "code": step.error_code}
    return web.json_response({"error": error}, status=step.status, headers=step.headers)
