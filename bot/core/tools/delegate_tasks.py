"""The background side of ``delegate``: ``check_result``, ``list_results``, ``cancel_task`` and ``await_sessions`` over
the caller's task records, and the deadline that stops a task still running past it.

Every answer is the ``delegate`` tool's result (``success``, ``output``, ``error``), in its contract words
(:mod:`bot.profiles`). Unlike per-workspace task files, a session sees only the tasks it started: one Discord server's
agent cannot read another conversation's delegations. ``cancel_task`` really stops the task's run and everything below
it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from bot.core.context import CoreContext
from bot.core.oversight.run_authority import Forbidden, RunAuthority
from bot.core.timers import skipped_if_bad
from bot.core.tools.delegate_records import DelegateRecords, summary, view
from bot.records import DelegateTask, Run, RunStatus, TaskStatus

if TYPE_CHECKING:  # the toolset imports this module's tool_result
    from bot.core.tools.session_toolset import Caller

MAX_AWAITED = 128
MAX_AWAIT_MS = 120_000
DEFAULT_AWAIT_MS = 30_000
DEADLINE_GRACE = 30.0  # past its own timeout, how long a task may take to wind down before it is stopped
_DEBUG_NAMES = {status: "".join(word.title() for word in status.value.split("_")) for status in TaskStatus}

log = structlog.get_logger(__name__)


def tool_result(success: bool, output: str = "", error: str | None = None) -> dict[str, Any]:
    """What every ``delegate`` action answers: its contract's result shape."""
    return {"success": success, "output": output, "error": error}


def _pretty(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _bad_task_id(value: str) -> str | None:
    """Task ids are UUIDs (a path guard; ours are never paths, but the wording is the contract)."""
    try:
        uuid.UUID(value)
    except ValueError:
        return f"Invalid task_id '{value}': must be a valid UUID"
    return None


def _failure(task: DelegateTask) -> str | None:
    if task.status in (TaskStatus.RUNNING, TaskStatus.COMPLETED):
        return None
    return task.error or f"background task is {task.status.value} and will not complete"


class DelegateTasks:
    def __init__(
        self,
        ctx: CoreContext,
        records: DelegateRecords,
        kill: Callable[[str], Awaitable[list[Run]]],
        authority: RunAuthority,
    ) -> None:
        self._ctx = ctx
        self._records = records
        self._kill = kill
        self._authority = authority

    async def start(self) -> None:
        """Rebuild the deadline of every task still running: its timer lived in the process that started it, and a
        run that outlives a restart (resumed from its journal, paused for an approval, waiting on such children) is
        stopped by nothing else. A deadline that passed meanwhile fires at once; every process on the store rebuilds
        it, and the first to expire it is the one that stops its run."""
        live = {run.id: run for run in await self._ctx.repos.runs.list_live()}
        for task in await self._ctx.repos.delegate_tasks.running():
            if (run := live.get(task.run_id)) is not None:
                with skipped_if_bad("delegate_deadline", task_id=task.task_id, deadline=task.deadline):
                    self.watch(task, run.timeout_seconds)

    def watch(self, task: DelegateTask, timeout_seconds: int) -> None:
        """Stop the task at its deadline if it is still running then.

        A run waiting on children has no timeout of its own, so this is the task's."""
        self._ctx.timers.at(
            f"delegate-deadline:{task.task_id}", task.deadline, self._expire, task.task_id, timeout_seconds
        )

    async def _expire(self, task_id: str, timeout_seconds: int) -> None:
        pending = await self._ctx.repos.delegate_tasks.get(task_id)
        run = await self._ctx.repos.runs.get(pending.run_id) if pending is not None else None
        if run is not None and run.status is RunStatus.AWAITING_APPROVAL:  # a person is deciding, within the
            self._ctx.timers.at(  # approval's own deadline: look again after another time limit
                f"delegate-deadline:{task_id}",
                self._ctx.clock() + timeout_seconds,
                self._expire,
                task_id,
                timeout_seconds,
            )
            return
        task = await self._records.expire(task_id, timeout_seconds)
        if task is not None:
            log.warning("delegate_task_timed_out", task_id=task_id, run_id=task.run_id)
            await self._kill(task.run_id)
            self._ctx.signals.progressed()

    async def _own(self, caller_key: str, task_id: str) -> DelegateTask | None:
        task = await self._ctx.repos.delegate_tasks.get(task_id)
        return task if task is not None and task.background and task.caller_session_key == caller_key else None

    async def check_result(self, caller_key: str, raw: dict[str, Any]) -> dict[str, Any]:
        task_id = raw.get("task_id")
        if not isinstance(task_id, str):
            return tool_result(False, error="Missing 'task_id' parameter for check_result")
        if bad := _bad_task_id(task_id):
            return tool_result(False, error=bad)
        task = await self._own(caller_key, task_id)
        if task is None:
            return tool_result(False, error=f"No result found for task_id '{task_id}'")
        return tool_result(task.status is TaskStatus.COMPLETED, _pretty(view(task)), _failure(task))

    async def list_results(self, caller_key: str) -> dict[str, Any]:
        tasks = await self._ctx.repos.delegate_tasks.background_of(caller_key)
        if not tasks:
            return tool_result(True, "No background delegate results found.")
        return tool_result(True, _pretty([summary(task) for task in tasks]))

    async def cancel_task(self, caller: Caller, raw: dict[str, Any]) -> dict[str, Any]:
        """Stop a task's run: only as the person whose turn started it could, or a moderator (audited)."""
        task_id = raw.get("task_id")
        if not isinstance(task_id, str):
            return tool_result(False, error="Missing 'task_id' parameter for cancel_task")
        if bad := _bad_task_id(task_id):
            return tool_result(False, error=bad)
        task = await self._own(caller.session.key, task_id)
        if task is None:
            return tool_result(False, error=f"No task found for task_id '{task_id}'")
        if task.status is not TaskStatus.RUNNING:
            return tool_result(False, error=f"Task '{task_id}' is not running (status: {_DEBUG_NAMES[task.status]})")
        turn, run = await self._ctx.repos.runs.get(caller.run_id), await self._ctx.repos.runs.get(task.run_id)
        try:
            await self._authority.check_turn(turn, run, f"task {task_id}", "kill", "delegate cancel_task")
        except Forbidden as refused:
            return tool_result(False, error=str(refused))
        stopped = await self._kill(task.run_id)
        settled = await self._ctx.repos.delegate_tasks.get(task_id)
        assert settled is not None, "task records are never deleted"
        if settled.status is not TaskStatus.CANCELLED:  # it ended on its own between the check and the kill
            return tool_result(False, error=f"Task '{task_id}' is not running (status: {_DEBUG_NAMES[settled.status]})")
        if stopped:
            log.info("delegate_task_cancelled", task_id=task_id, run_id=task.run_id)
            return tool_result(True, f"Task '{task_id}' cancelled: the running task was aborted.")
        return tool_result(True, f"Task '{task_id}' marked cancelled (it had already settled).")

    async def await_sessions(self, caller_key: str, raw: dict[str, Any]) -> dict[str, Any]:
        task_ids = raw.get("task_ids")
        if refused := _await_refusal(task_ids, raw.get("timeout_ms", DEFAULT_AWAIT_MS)):
            return tool_result(False, error=refused)
        assert isinstance(task_ids, list)
        timeout_ms = raw.get("timeout_ms", DEFAULT_AWAIT_MS)

        async def report() -> dict[str, Any]:
            found = {task_id: await self._own(caller_key, task_id) for task_id in task_ids}
            tasks = [task for task in found.values() if task is not None]
            return {
                "completed": sum(task.status is TaskStatus.COMPLETED for task in tasks),
                "pending": [task.task_id for task in tasks if task.status is TaskStatus.RUNNING],
                "missing": [task_id for task_id, task in found.items() if task is None],
                "failed": [task.task_id for task in tasks if _failure(task) is not None],
                "results": [view(task) for task in tasks],
            }

        async def settled() -> dict[str, Any] | None:
            current = await report()
            return None if current["pending"] or current["missing"] else current

        final = await self._ctx.signals.wait_for(settled, timeout_ms / 1000) or await report()
        if final["pending"] or final["missing"]:
            output = _pretty({"status": "timeout", **final})
            return tool_result(False, output, "one or more background tasks are still pending or missing")
        error = "one or more background tasks failed or were cancelled" if final["failed"] else None
        return tool_result(error is None, _pretty({"status": "complete", **final}), error)


def _await_refusal(task_ids: object, timeout_ms: object) -> str | None:
    """``await_sessions``' argument rules, in the contract's order and words."""
    if not isinstance(task_ids, list):
        return "Missing 'task_ids' parameter for await_sessions"
    if len(task_ids) > MAX_AWAITED:
        return f"'task_ids' must contain no more than {MAX_AWAITED} task ids"
    seen: set[str] = set()
    for task_id in task_ids:
        if not isinstance(task_id, str):
            return "'task_ids' must contain only strings"
        if bad := _bad_task_id(task_id):
            return bad
        if task_id in seen:
            return f"Duplicate task_id '{task_id}' in task_ids"
        seen.add(task_id)
    if not task_ids:
        return "'task_ids' must contain at least one task id"
    if not isinstance(timeout_ms, int) or isinstance(timeout_ms, bool) or timeout_ms < 0:
        return "'timeout_ms' must be an integer"
    if timeout_ms > MAX_AWAIT_MS:
        return f"'timeout_ms' must be no more than {MAX_AWAIT_MS}"
    return None
