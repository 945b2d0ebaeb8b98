"""A delegate task's record, settled in the transaction that ends its run.

So a task can be neither left ``running`` nor settled twice. The run's end is worded in the ``delegate`` tool's contract
words for a delegation's result (:mod:`bot.profiles`): the header and the answer, or ``Agent '<a>' failed: …``,
``… timed out after <N>s``, a cancellation, and ``lost`` for a task whose process died (``timed_out`` when its deadline
had passed by then). An answer a later candidate of the target's fallback chain gave carries the contract's
``requested: …; served: …`` header and warning, so the asking agent knows, without the provider's failure details.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.agents.runner import final_text
from bot.core.context import CoreContext
from bot.records import DelegateTask, Run, RunStatus, TaskStatus
from storage.db import Connection

CANCELLED_BY_USER = "Cancelled by user request"
CANCELLED_BY_PARENT = "Cancelled by parent session"
RECONCILED_NOTE = "the owning daemon exited or the task exceeded its max runtime; reconciled by the supervision reaper"
AGENTIC = ", agentic"
FALLBACK_WARNING = (
    "Warning: The delegated agent recovered through a provider fallback. Provider failure details were logged and "
    "omitted from this result."
)


def agent_header(agent: str, model: str, *, agentic: bool) -> str:
    """The first line of a delegate's answer: ``[Agent '<a>' (<provider>/<model>)]``."""
    return f"[Agent '{agent}' ({model}{AGENTIC if agentic else ''})]"


def answer(task: DelegateTask, run: Run, text: str) -> str:
    """The delegate's answer under its header; when a fallback served it, the contract's header naming both models
    (agentic as the task's own header says) and the warning after it."""
    served = run.fallback_model
    if served is None:
        return f"{task.header}\n{text}"
    models = f"requested: {run.model}; served: {served}"
    fallback_header = agent_header(task.agent, models, agentic=task.header.endswith(f"{AGENTIC})]"))
    return f"{fallback_header}\n{text}\n\n{FALLBACK_WARNING}"


def invalid_completion(agent: str) -> str:
    return f"Agent '{agent}' failed: model provider returned an invalid semantic completion."


def timed_out(agent: str, seconds: int) -> str:
    return f"Agent '{agent}' timed out after {seconds}s"


def _instant(when: float | None) -> str | None:
    return datetime.fromtimestamp(when, UTC).isoformat() if when is not None else None


def view(task: DelegateTask) -> dict[str, Any]:
    """The record as ``check_result`` shows it; a reconciled task shows why instead of an output."""
    if task.note is not None:
        return {
            "task_id": task.task_id,
            "agent": task.agent,
            "status": task.status.value,
            "started_at": _instant(task.started_at),
            "note": task.note,
        }
    return {
        "task_id": task.task_id,
        "agent": task.agent,
        "status": task.status.value,
        "output": task.output,
        "error": task.error,
        "started_at": _instant(task.started_at),
        "finished_at": _instant(task.finished_at),
    }


def summary(task: DelegateTask) -> dict[str, Any]:
    """The record as ``list_results`` shows it (no output)."""
    return {
        "task_id": task.task_id,
        "agent": task.agent,
        "status": task.status.value,
        "started_at": _instant(task.started_at),
        "finished_at": _instant(task.finished_at),
    }


class DelegateRecords:
    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx

    async def settle(
        self, tx: Connection, run: Run, now: float, *, killed_directly: bool = False
    ) -> DelegateTask | None:
        """Record how ``run`` ended on its task; returns the task it settled.

        Nothing is recorded if it is no delegation or its task has settled."""
        task = await self._ctx.repos.delegate_tasks.for_run(run.id, tx)
        if task is None or task.status is not TaskStatus.RUNNING:
            return None
        tasks, agent = self._ctx.repos.delegate_tasks, task.agent
        if run.status is RunStatus.COMPLETED:
            text = final_text(await self._ctx.repos.transcripts.for_run(run.id))
            if text:
                await tasks.finish(tx, task.task_id, TaskStatus.COMPLETED, now, output=answer(task, run, text))
            else:
                await tasks.finish(tx, task.task_id, TaskStatus.FAILED, now, error=invalid_completion(agent))
        elif run.status is RunStatus.TIMED_OUT:
            await tasks.finish(tx, task.task_id, TaskStatus.TIMED_OUT, now, error=timed_out(agent, run.timeout_seconds))
        elif run.status is RunStatus.KILLED:
            reason = CANCELLED_BY_USER if killed_directly else CANCELLED_BY_PARENT
            await tasks.finish(tx, task.task_id, TaskStatus.CANCELLED, now, error=reason)
        elif run.status is RunStatus.INTERRUPTED:
            status = TaskStatus.TIMED_OUT if now > task.deadline else TaskStatus.LOST
            await tasks.finish(tx, task.task_id, status, now, note=RECONCILED_NOTE)
        else:
            await tasks.finish(tx, task.task_id, TaskStatus.FAILED, now, error=f"Agent '{agent}' failed: {run.error}")
        return task

    async def expire(self, task_id: str, timeout_seconds: int) -> DelegateTask | None:
        """Record a task still running at its deadline as timed out; ``None`` if it had settled.

        The caller then stops its run."""
        async with self._ctx.repos.db.transaction() as tx:
            task = await self._ctx.repos.delegate_tasks.get(task_id, tx)
            if task is None or task.status is not TaskStatus.RUNNING:
                return None
            error = timed_out(task.agent, timeout_seconds)
            # compare-and-set: on PostgreSQL another process may have read it running too, and finished it first
            finished = await self._ctx.repos.delegate_tasks.finish(
                tx, task_id, TaskStatus.TIMED_OUT, self._ctx.clock(), error=error, note=RECONCILED_NOTE
            )
        return task if finished else None
