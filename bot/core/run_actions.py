"""The checks a person's command and an agent's tool both go through before killing or steering a run. Each
caller words the outcome in its own vocabulary; the kill itself is one (``Orchestrator.kill``, a subtree)."""

from __future__ import annotations

from enum import StrEnum

from bot.records import Run, RunStatus


class NotActionable(StrEnum):
    FINISHED = "finished"  # nothing live to act on
    WAITING = "waiting"  # waiting on its children: steer them instead


def kill_refusal(run: Run | None) -> NotActionable | None:
    if run is None or run.status.is_terminal:
        return NotActionable.FINISHED
    return None


def steer_refusal(run: Run | None) -> NotActionable | None:
    """A run takes a steer while queued or running; a waiting run reads only its children's results."""
    if run is not None and run.status is RunStatus.WAITING_CHILDREN:
        return NotActionable.WAITING
    return kill_refusal(run)


def descendants(stopped: list[Run]) -> int:
    """How many runs a kill stopped below the one it targeted."""
    return len(stopped) - 1
