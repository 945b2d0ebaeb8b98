"""Where a turn starts and what it stored, so a replay stores nothing twice.

A turn replayed by a recovered workflow (``durable_runs``) starts from the same history and usage, and stores each of
its messages, and their spending, once.

Where a turn starts is a step journaled in the store (``durable.store_steps``), as JSON. A turn's messages are
stored in order as the runner produces them: the ``k``-th message of the turn is the run's transcript row
``run_rows + k``. A replayed turn produces the same messages again (the model's answers come from the
journal); the ones already stored are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal

from pydantic_ai.messages import ModelMessage

from bot.records import Usage
from storage.repositories import Repositories


@dataclass(frozen=True)
class TurnStart:
    usage: Usage  # the run's usage before the turn
    history_rows: int  # the session's transcript rows before the turn: its history
    run_rows: int  # the run's own transcript rows before the turn

    def encoded(self) -> str:
        usage = asdict(self.usage) | {"cost": None if self.usage.cost is None else str(self.usage.cost)}
        return json.dumps({"usage": usage, "history_rows": self.history_rows, "run_rows": self.run_rows})

    @classmethod
    def decoded(cls, text: str) -> TurnStart:
        fields = json.loads(text)
        cost = fields["usage"]["cost"]
        usage = fields["usage"] | {"cost": None if cost is None else Decimal(cost)}
        return cls(usage=Usage(**usage), history_rows=fields["history_rows"], run_rows=fields["run_rows"])


async def turn_start(repos: Repositories, run_id: str, session_key: str, usage: Usage, *, first: bool) -> TurnStart:
    """Where a turn of the run starts now; ``first``: the run was queued until now, so ``usage`` is its stored
    usage and it has no transcript rows yet."""
    if first:
        return TurnStart(usage=usage, history_rows=await repos.transcripts.count(session_key), run_rows=0)
    current = await repos.runs.get(run_id)
    return TurnStart(
        usage=current.usage if current is not None else usage,
        history_rows=await repos.transcripts.count(session_key),
        run_rows=await repos.transcripts.count_for_run(run_id),
    )


class TurnMessages:
    """The messages of one turn, handed over in order.

    Those a replayed turn stored already are left out."""

    def __init__(self, repos: Repositories, run_id: str, start: TurnStart, *, replayed: bool) -> None:
        """``replayed``: the turn may have run before, in an execution a crash cut off."""
        self._repos = repos
        self._run_id = run_id
        self._start = start
        self._replayed = replayed
        self._seen = 0

    async def unstored(self, messages: Sequence[ModelMessage]) -> Sequence[ModelMessage]:
        first, self._seen = self._seen, self._seen + len(messages)
        if not self._replayed:  # no execution before this one stored any
            return messages
        stored = await self._repos.transcripts.count_for_run(self._run_id) - self._start.run_rows
        return messages[max(0, stored - first) :]
