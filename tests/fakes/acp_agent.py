"""An ACP agent for the tests, written with the Agent Client Protocol's Python SDK and served over stdio.

Each prompt is its own script: steps separated by ``;``, run in order —
``plan`` (a two-entry plan), ``tool:<title>`` (a tool call in progress), ``ask`` (a permission request; the chosen
outcome is recorded), ``read:<path>`` and ``write:<path>=<text>`` (file requests to the client; the answer or error
is recorded), ``gate`` (wait until the file ``ACP_GATE_FILE`` exists), ``hold`` (wait until cancelled),
``reply:<text>`` (a message chunk), ``die`` (the process ends at once, like a crash). With no ``reply`` the
agent answers ``echo: <prompt>``.

Every event is one JSON line in the file named by ``ACP_LOG_FILE``: ``start`` (with the process id), ``session``,
``prompt`` (with the session id and text), ``permission``, ``read``, ``write``, ``cancel``.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

from acp import (
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    plan_entry,
    run_agent,
    start_tool_call,
    text_block,
    update_agent_message,
    update_plan,
)
from acp.interfaces import Client
from acp.schema import PermissionOption, ToolCallUpdate


def _record(event: str, **fields: Any) -> None:
    path = os.environ.get("ACP_LOG_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"event": event, **fields}) + "\n")


class FakeAgent(Agent):
    _conn: Client

    def __init__(self) -> None:
        self._cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = uuid.uuid4().hex
        _record("session", session=session_id, cwd=cwd)
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        _record("cancel", session=session_id)
        self._cancelled.setdefault(session_id, asyncio.Event()).set()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        _record("prompt", session=session_id, text=text)
        cancelled = self._cancelled[session_id] = asyncio.Event()
        replied = False
        for step in (part.strip() for part in text.split(";")):
            verb, _, argument = step.partition(":")
            if verb == "plan":
                entries = [plan_entry("Read the code", status="completed"), plan_entry("Fix the bug")]
                await self._conn.session_update(session_id=session_id, update=update_plan(entries))
            elif verb == "tool":
                update = start_tool_call("call-1", argument, kind="edit", status="in_progress")
                await self._conn.session_update(session_id=session_id, update=update)
            elif verb == "ask":
                options = [
                    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
                ]
                call = ToolCallUpdate(tool_call_id="call-1", title="Edit main.py")
                answer = await self._conn.request_permission(session_id=session_id, tool_call=call, options=options)
                chosen = getattr(answer.outcome, "option_id", answer.outcome.outcome)
                _record("permission", outcome=chosen)
            elif verb in ("read", "write"):
                path, _, content = argument.partition("=")
                try:
                    if verb == "read":
                        read = await self._conn.read_text_file(session_id=session_id, path=path)
                        _record("read", path=path, content=read.content)
                    else:
                        await self._conn.write_text_file(session_id=session_id, path=path, content=content)
                        _record("write", path=path)
                except RequestError as error:
                    _record(verb, path=path, error=json.dumps(error.data))
            elif verb == "gate":
                while not Path(os.environ["ACP_GATE_FILE"]).exists():
                    await asyncio.sleep(0.05)
            elif verb == "hold":
                await cancelled.wait()
                return PromptResponse(stop_reason="cancelled")
            elif verb == "die":
                os._exit(1)
            elif verb == "reply":
                replied = True
                await self._conn.session_update(
                    session_id=session_id, update=update_agent_message(text_block(argument))
                )
        if not replied:
            echo = update_agent_message(text_block(f"echo: {text}"))
            await self._conn.session_update(session_id=session_id, update=echo)
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    _record("start", pid=os.getpid())
    asyncio.run(run_agent(FakeAgent()))
