"""Read-side views of sessions and runs: children with truthful statuses, target resolution, transcripts.

Shared by the agent tools and (later) the slash commands, so both number and name runs the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import ModelMessage, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

from bot.core.attachments import shown
from bot.core.context import CoreContext
from bot.core.errors import UnknownTarget
from bot.core.files.attached_files import ATTACH_FILE
from bot.i18n import Words
from bot.records import SHORT_RUN_ID, Run, RunStatus, Session, SpawnSite
from bot.text import quoted

RECENT_SECONDS = 30 * 60
_RUN_ID_PREFIX = re.compile(r"[0-9a-f]{4,32}")


def _shown_run_id(token: str) -> bool:
    """Whether ``token`` could be a run id as messages show it, or longer: one of digits only is not an index."""
    return len(token) >= SHORT_RUN_ID and _RUN_ID_PREFIX.fullmatch(token) is not None


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def run_label(session: Session) -> str:
    """How people see a sub-agent named: its label, else the start of the task it was spawned with."""
    return session.label or (session.task or session.agent_id)[:48]


@dataclass(frozen=True)
class ChildRow:
    session: Session
    run: Run | None
    waiting_on: int
    task_id: str | None = None  # a delegate's task record
    place: int | None = None  # a queued run's place in the sub-agent lane's queue (1 starts next)

    @property
    def kind(self) -> str | None:
        """What kind of session this is, for lists; ``None`` for any other.

        ``subagent`` or ``delegate`` is a child an agent's tool started for itself, ``scheduled`` a schedule's
        firing."""
        if self.session.delegation:
            return self.session.delegation.kind
        return "scheduled" if self.session.spawn_site is SpawnSite.CRON else None

    @property
    def label(self) -> str:
        return run_label(self.session)

    @property
    def status(self) -> str:
        if self.run is None:
            return "unknown"
        if self.run.status is RunStatus.WAITING_CHILDREN:
            noun = "child" if self.waiting_on == 1 else "children"
            return f"waiting on {self.waiting_on} {noun}"
        if self.run.status is RunStatus.QUEUED and self.place is not None:
            return f"queued, {_ordinal(self.place)} in line"
        return self.run.status.word

    def as_dict(self, index: int) -> dict[str, Any]:
        return {
            "index": index,
            "label": self.label,
            "agentId": self.session.agent_id,
            "sessionKey": self.session.key,
            "runId": self.run.id if self.run else None,
            "status": self.status,
            "archived": self.session.archived_at is not None,
            **({"kind": self.kind} if self.kind else {}),
            **({"taskId": self.task_id} if self.task_id else {}),
        }


class SessionQueries:
    def __init__(self, ctx: CoreContext, queue_places: Callable[[], Awaitable[dict[str, int]]]) -> None:
        self._ctx = ctx
        self._queue_places = queue_places

    async def _row(self, session: Session, places: dict[str, int] | None = None) -> ChildRow:
        """``places``: the lane's queue places, read once for a whole list (with durable runs, a query of DBOS)."""
        run = await self._ctx.repos.runs.latest_for_session(session.key)
        waiting = 0
        if run is not None and run.status is RunStatus.WAITING_CHILDREN:
            waiting = await self._ctx.repos.runs.count_unsettled_children(run.id)
        task = await self._ctx.repos.delegate_tasks.for_run(run.id) if run is not None and session.delegation else None
        place = None
        if run is not None and run.status is RunStatus.QUEUED:
            place = (places if places is not None else await self._queue_places()).get(run.id)
        return ChildRow(session, run, waiting, task.task_id if task else None, place)

    async def children(self, requester_key: str) -> list[ChildRow]:
        """Children of a session: active ones first, then those that ended in the last 30 minutes."""
        places = await self._queue_places()
        rows = [await self._row(session, places) for session in await self._ctx.repos.sessions.children(requester_key)]
        now = self._ctx.clock()
        active = [r for r in rows if r.run is not None and not r.run.status.is_terminal]
        recent = [
            r
            for r in rows
            if r.run is not None and r.run.status.is_terminal and (r.run.ended_at or 0) >= now - RECENT_SECONDS
        ]
        return active + recent

    async def any_child(self, requester_key: str, token: str) -> ChildRow | None:
        """A child of any age, by full session key or unique run id prefix.

        The numbered list only covers the last 30 minutes; ids do not expire. By a run id, a descendant further down is
        found too (a Kill button names its run by id). An archived one is found too: it can still be read, and refuses
        new messages itself."""
        token = token.strip()
        if ":" in token:
            session = await self.own_child(requester_key, token)
        elif _RUN_ID_PREFIX.fullmatch(token.lower()):
            keys = await self._ctx.repos.runs.sessions_with_run_prefix(requester_key, token.lower())
            if len(keys) > 1:
                raise UnknownTarget(Words("refused-ambiguous-run-prefix", {"target": token}))
            session = await self._ctx.repos.sessions.get(keys[0]) if keys else None
        else:
            session = None
        return await self._row(session) if session is not None else None

    async def own_child(self, requester_key: str, session_key: str) -> Session | None:
        session = await self._ctx.repos.sessions.get(session_key)
        return session if session is not None and session.requester_session_key == requester_key else None

    @staticmethod
    def resolve_target(rows: list[ChildRow], token: str) -> ChildRow:
        """Index (``#3``/``3``), ``last``, session key, exact label, unique label prefix, unique run-id prefix."""
        token = token.strip()
        shown = quoted(token)
        if token == "last":
            if not rows:
                raise UnknownTarget(Words("refused-unknown-target", {"target": "last"}))
            return max(rows, key=lambda r: r.run.created_at if r.run else 0)
        digits = token.removeprefix("#")
        if digits.isdecimal():
            number = digits.lstrip("0")
            # Compared by length first: int() refuses numbers of more than 4,300 digits.
            if len(number) <= len(str(len(rows))) and 1 <= int(number or "0") <= len(rows):
                return rows[int(number) - 1]
            if not _shown_run_id(token):
                raise UnknownTarget(Words("refused-invalid-index", {"target": shown}))
        if ":" in token:
            for row in rows:
                if row.session.key == token:
                    return row
            raise UnknownTarget(Words("refused-unknown-session", {"target": shown}))
        lowered = token.lower()
        exact = [r for r in rows if r.label.lower() == lowered]
        if len(exact) == 1:
            return exact[0]
        if len(exact) > 1:
            raise UnknownTarget(Words("refused-ambiguous-label", {"target": shown}))
        prefixed = [r for r in rows if r.label.lower().startswith(lowered)]
        if len(prefixed) == 1:
            return prefixed[0]
        if len(prefixed) > 1:
            raise UnknownTarget(Words("refused-ambiguous-label-prefix", {"target": shown}))
        by_run = [r for r in rows if r.run is not None and r.run.id.startswith(lowered)]
        if len(by_run) == 1:
            return by_run[0]
        if len(by_run) > 1:
            raise UnknownTarget(Words("refused-ambiguous-run-prefix", {"target": shown}))
        raise UnknownTarget(Words("refused-unknown-target", {"target": shown}))

    async def assistant_texts(self, session_key: str) -> list[str]:
        return [
            entry["text"] for entry in await self.history(session_key, 10_000, False) if entry["role"] == "assistant"
        ]

    async def history(self, session_key: str, limit: int, include_tools: bool) -> list[dict[str, str]]:
        """The last ``limit`` transcript entries as ``{role, text}``; tool traffic only with ``include_tools``. The
        transcript is read from its end, ``limit`` messages at a time, only until that many entries are found."""
        entries: list[dict[str, str]] = []
        before: int | None = None
        while len(entries) < limit:
            page = await self._ctx.repos.transcripts.last(session_key, limit, before)
            entries = [entry for _, message in page for entry in _entries(message, include_tools)] + entries
            if len(page) < limit:
                break
            before = page[0][0]
        return entries[-limit:]


def _entries(message: ModelMessage, include_tools: bool) -> list[dict[str, str]]:
    """One transcript message's entries as ``{role, text}``."""
    entries: list[dict[str, str]] = []
    for part in message.parts:
        if isinstance(part, UserPromptPart):  # with its attachments' labels (name, size, kind) and text files
            entries.append({"role": "user", "text": shown(part.content)})
        elif isinstance(part, TextPart) and part.content.strip():
            entries.append({"role": "assistant", "text": part.content})
        elif isinstance(part, ToolReturnPart) and part.tool_name == ATTACH_FILE and (attached := _attached(part)):
            entries.append({"role": "file", "text": attached})
        elif include_tools and isinstance(part, ToolCallPart):
            entries.append({"role": "tool_call", "text": f"{part.tool_name}({part.args_as_json_str()})"})
        elif include_tools and isinstance(part, ToolReturnPart):
            entries.append({"role": "tool_result", "text": part.model_response_str()})
    return entries


def _attached(part: ToolReturnPart) -> str | None:
    """What an ``attach_file`` call attached, as the log shows it: its name and size (``None``: it was refused)."""
    content = part.content
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except ValueError:
            return None
    if not isinstance(content, dict) or content.get("status") != "ok":
        return None
    return f"{content.get('name')} ({content.get('bytes', 0):,} bytes)"
