"""Durable runs wait in DBOS's queues: a session's main-agent turns run one at a time and in the order they were
asked, whichever process takes them, while other sessions' turns run beside them; and a turn asked while an earlier
one is paused for an approval waits for it."""

from __future__ import annotations

from dataclasses import replace

from pydantic_ai.messages import ModelResponse, TextPart

from bot.core.runs.requests import ChatRequest
from bot.records import RunStatus
from tests.core_support import ORIGIN, ScriptedModels, running_core, settle
from tests.polling import stays
from tests.test_fairness import Work

CONFIG = """
[agents.defaults]
model = "test/work"
[agents.list.main]
"""
ELSEWHERE = replace(ORIGIN, channel_id=200, conversation="discord:channel:200")


def last_prompt(messages) -> str:
    return next(p.content for p in reversed(messages[-1].parts) if p.part_kind == "user-prompt")


class Turns(Work):
    """Like :class:`Work`, named by the turn's own prompt (a session's later turns carry the earlier ones)."""

    async def __call__(self, messages, info):
        turn = last_prompt(messages)
        self.started.append(turn)
        await self._finish[turn].wait()
        return ModelResponse(parts=[TextPart(f"{turn} done")])


async def test_a_sessions_turns_run_one_at_a_time_in_order_and_another_sessions_beside_them(tmp_path):
    turns = Turns()
    async with running_core(tmp_path, ScriptedModels(work=turns), CONFIG, durable=True) as core:
        first = await core.chat(ChatRequest(text="one", origin=ORIGIN))
        await settle(core, lambda: turns.started == ["one"])
        asked = [await core.chat(ChatRequest(text=text, origin=ORIGIN)) for text in ("two", "three", "four")]
        other = await core.chat(ChatRequest(text="other", origin=ELSEWHERE))
        await settle(core, lambda: turns.started == ["one", "other"])
        await stays(  # three polls of the queue: the session's place is taken
            lambda: turns.started == ["one", "other"], for_seconds=0.3, describe=lambda: f"started: {turns.started}"
        )
        assert turns.started == ["one", "other"]
        assert [(await core.runs.get(run_id)).status for run_id in asked] == [RunStatus.QUEUED] * 3

        for n, text in enumerate(("one", "two", "three"), start=2):
            turns.finish(text)
            await settle(core, lambda n=n: len([t for t in turns.started if t != "other"]) == n)
        turns.finish("four")
        turns.finish("other")
        for run_id in (first, *asked, other):
            await settle(core, lambda run_id=run_id: _completed(core, run_id))
    assert [t for t in turns.started if t != "other"] == ["one", "two", "three", "four"]


async def _completed(core, run_id: str) -> bool:
    return (await core.runs.get(run_id)).status is RunStatus.COMPLETED
