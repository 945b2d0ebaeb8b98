"""Reading the end of a transcript: ``last`` reads only the rows asked for, newest last, page by page backwards; and
the log view built on it shows the last entries however many messages held none."""

from __future__ import annotations

from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart

from bot.core.oversight.session_queries import SessionQueries
from bot.records import Session, SessionKind, SessionRole
from storage.db import Database
from storage.repositories import Repositories
from tests import stores
from tests.core_support import context

KEY = "agent:main:discord:channel:1"


async def _transcript(tmp_path, messages) -> Repositories:
    db = await Database.open(stores.database(tmp_path / "db.sqlite3"))
    repos = Repositories.over(db)
    session = Session(KEY, "main", SessionKind.MAIN, 0, SessionRole.MAIN, None, None, 1, 1, None, 0.0)
    async with db.transaction() as tx:
        await repos.sessions.insert(tx, session)
        await repos.sessions.insert(tx, Session(**{**session.__dict__, "key": "other"}))
        await repos.transcripts.append(tx, "other", None, [ModelRequest(parts=[UserPromptPart("elsewhere")])])
        await repos.transcripts.append(tx, KEY, None, messages)
    return repos


async def _none() -> dict[str, int]:
    return {}


def said(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(text)])


async def test_last_reads_the_newest_rows_in_order_and_pages_backwards(tmp_path):
    repos = await _transcript(tmp_path, [said(f"message {i}") for i in range(7)])
    try:
        page = await repos.transcripts.last(KEY, 3)
        assert [message.parts[0].content for _, message in page] == ["message 4", "message 5", "message 6"]
        ids = [row_id for row_id, _ in page]
        assert ids == sorted(ids)
        earlier = await repos.transcripts.last(KEY, 3, before=ids[0])
        assert [message.parts[0].content for _, message in earlier] == ["message 1", "message 2", "message 3"]
        first = await repos.transcripts.last(KEY, 3, before=earlier[0][0])
        assert [message.parts[0].content for _, message in first] == ["message 0"]
        assert await repos.transcripts.last("nobody", 3) == []
    finally:
        await repos.db.close()


async def test_history_finds_the_last_entries_behind_messages_that_hold_none(tmp_path):
    tool_work = [ModelResponse(parts=[ToolCallPart("calc__add", {"a": i, "b": i})]) for i in range(5)]
    messages = [said("first"), ModelResponse(parts=[TextPart("answer")]), *tool_work, said("last")]
    repos = await _transcript(tmp_path, messages)
    try:
        queries = SessionQueries(context(repos), _none)
        assert await queries.history(KEY, 3, include_tools=False) == [
            {"role": "user", "text": "first"},
            {"role": "assistant", "text": "answer"},
            {"role": "user", "text": "last"},
        ]
        assert await queries.history(KEY, 2, include_tools=True) == [
            {"role": "tool_call", "text": 'calc__add({"a":4,"b":4})'},
            {"role": "user", "text": "last"},
        ]
        assert await queries.history(KEY, 50, include_tools=False) == await queries.history(KEY, 3, False)
    finally:
        await repos.db.close()
