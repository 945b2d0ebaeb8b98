"""The checks before killing or steering a run, for people's commands and agents' tools.

Both go through them. Each caller words the outcome in its own vocabulary; the kill itself is one
(``Orchestrator.kill``, a subtree)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import TypeVar

from bot.records import Run, RunStatus

T = TypeVar("T")


class NotActionable(StrEnum):
    FINISHED = "finished"  # nothing live to act on
    WAITING = "waiting"  # waiting on its children: steer them instead


def kill_refusal(run: Run | None) -> NotActionable | None:
    """A live run can be killed (with everything below it)."""
    if run is None or run.status.is_terminal:
        return NotActionable.FINISHED
    return None


def steer_refusal(run: Run | None) -> NotActionable | None:
    """A run takes a steer while queued or running; a waiting run reads only its children's results."""
    if run is not None and run.status is RunStatus.WAITING_CHILDREN:
        return NotActionable.WAITING
    return kill_refusal(run)


def live_runs(rows: Iterable[T], run_of: Callable[[T], Run | None]) -> list[tuple[T, Run]]:
    """The rows whose run is live, each with that run."""
    return [(row, run) for row in rows if (run := run_of(row)) is not None and not run.status.is_terminal]


def descendants(stopped: list[Run]) -> int | None:
    """How many runs a kill stopped below the one it targeted; ``None`` when it stopped nothing (the run ended
    between the check and the kill)."""
    return len(stopped) - 1 if stopped else None
