"""The ``delegate`` tool: hand a prompt to a different configured agent — and wait for its answer, start it in
the background (a durable task record), or fan it out to several agents at once.

A delegation is a run with its own session (kind ``delegate`` in lists): ``/subagents`` shows, inspects and kills
it like any sub-agent, a kill of its caller cascades into it, and its result goes to the agent that asked, never
straight to the channel. Checks run in the tool's contract order, with its words (:mod:`bot.profiles`): the action, the
arguments, an unknown target, the depth (the target's ``max_delegation_depth`` against the caller's depth), the
read-only level, the shared action budget, the caller's delegation policy and reach
(:mod:`bot.core.tools.delegate_reach`), then an independent target that asks for approvals.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import structlog

from bot.core.context import CoreContext
from bot.core.durable.durable_runs import step
from bot.core.errors import UserError
from bot.core.runs.requests import delegated_session, new_run, origin_of
from bot.core.runs.spawning import Spawning
from bot.core.tools.action_budget import ActionBudget, BudgetExhausted
from bot.core.tools.delegate_reach import Mode, always_ask_refusal, reach_refusal, reachable_targets
from bot.core.tools.delegate_records import agent_header
from bot.core.tools.delegate_tasks import DEADLINE_GRACE, DelegateTasks, tool_result
from bot.core.tools.session_toolset import Caller
from bot.records import (
    DelegateTask,
    Delegation,
    RunKind,
    Session,
    SessionRole,
    SpawnSite,
    TaskStatus,
)
from storage.db import Connection

ACTIONS = ("delegate", "check_result", "list_results", "cancel_task", "await_sessions")
MAX_BACKGROUND = 128
_WAIT_STEP = 3600.0  # the caller waits as long as the task runs: its deadline ends it

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class _Admitted:
    target: str
    mode: Mode


class Delegating:
    def __init__(
        self,
        ctx: CoreContext,
        spawning: Spawning,
        tasks: DelegateTasks,
        budget: ActionBudget,
    ) -> None:
        self._ctx = ctx
        self._spawning = spawning
        self._tasks = tasks
        self._budget = budget

    async def handle(self, caller: Caller, raw: dict[str, Any]) -> dict[str, Any]:
        """One ``delegate`` call, dispatched on its ``action``."""
        action = raw.get("action", "delegate")
        key = caller.session.key
        if action == "check_result":
            return await self._tasks.check_result(key, raw)
        if action == "list_results":
            return await self._tasks.list_results(key)
        if action == "cancel_task":
            return await self._tasks.cancel_task(caller, raw)
        if action == "await_sessions":
            return await self._tasks.await_sessions(key, raw)
        if action != "delegate":
            return tool_result(False, error=f"Unknown action '{action}'. Use {'/'.join(ACTIONS)}.")
        prompt = _prompt(raw)
        if isinstance(raw.get("parallel"), list):
            return await self._parallel(caller, raw["parallel"], prompt)
        agent = raw.get("agent")
        if not isinstance(agent, str):
            return tool_result(False, error="Missing 'agent' parameter")
        if not agent.strip():
            return tool_result(False, error="'agent' parameter must not be empty")
        if prompt is None:
            return tool_result(False, error="Missing 'prompt' parameter")
        if not prompt.strip():
            return tool_result(False, error="'prompt' parameter must not be empty")
        if raw.get("background") is True:
            return await self._background(caller, agent.strip(), prompt)
        return await self.delegate(caller, agent.strip(), prompt)

    async def delegate(self, caller: Caller, target: str, prompt: str) -> dict[str, Any]:
        """A synchronous delegation: the caller's tool call waits for the target's answer."""
        task = await step("delegate", self._checked_launch, caller, target, prompt, background=False)
        if isinstance(task, str):
            return tool_result(False, error=task)
        settled = await self._settled(task.task_id)
        if settled.status is TaskStatus.COMPLETED:
            return tool_result(True, settled.output or "")
        return tool_result(False, error=settled.error or f"Agent '{target}' failed: {settled.status.value}")

    async def _background(self, caller: Caller, target: str, prompt: str) -> dict[str, Any]:
        task = await step("delegate.background", self._checked_launch, caller, target, prompt, background=True)
        if isinstance(task, str):
            return tool_result(False, error=task)
        return tool_result(
            True,
            f"Background task started for agent '{target}'.\ntask_id: {task.task_id}\n"
            f"Use action='check_result' with task_id='{task.task_id}' to retrieve the result.",
        )

    async def _checked_launch(
        self, caller: Caller, target: str, prompt: str, *, background: bool
    ) -> DelegateTask | str:
        """Every check in the contract's order, then the launch: the task, or the first refusal's words. A step of a
        durable run: a run resumed after a crash gets the same task back (and waits for it), and launches no other."""
        if refusal := self._precheck(caller.session, target, full_stop=not background):
            return refusal
        try:
            async with self._budget.charge(caller.session) as charged_to:
                admitted = self._admit(caller.session, target)
                if isinstance(admitted, str):
                    return admitted
                if background and await self._ctx.repos.delegate_tasks.count_running_background() >= MAX_BACKGROUND:
                    return (
                        f"Too many background delegations in flight (limit {MAX_BACKGROUND}). Wait for some to "
                        "finish (check_result) or cancel one (cancel_task) before starting more."
                    )
                return await self._launch(caller, admitted, prompt, charged_to, background=background)
        except (BudgetExhausted, UserError) as refused:  # a caller that ended, a budget that is spent
            return str(refused)

    async def _parallel(self, caller: Caller, names: list[Any], prompt: str | None) -> dict[str, Any]:
        """The same prompt to several agents at once; blocks in input order. Admission is all-or-nothing; each
        target then spends one action and is checked again as it starts."""
        if prompt is None:
            return tool_result(False, error="Missing 'prompt' parameter for parallel execution")
        if not prompt.strip():
            return tool_result(False, error="'prompt' parameter must not be empty")
        targets = [name.strip() for name in names if isinstance(name, str) and name.strip()]
        if not targets:
            return tool_result(False, error="'parallel' array must contain at least one agent name")
        for target in targets:
            if target not in self._ctx.config.agents.list:
                return tool_result(
                    False, error=f"Unknown agent '{target}' in parallel list. Available: {self._all_agents()}"
                )
        for target in targets:
            refusal = reach_refusal(self._ctx.config, caller.session.agent_id, target) or self._asks(
                caller.session, target
            )
            if refusal:
                return tool_result(False, error=refusal)
        results = await asyncio.gather(*(self.delegate(caller, target, prompt) for target in targets))
        blocks = [
            f"--- {target} (success={str(result['success']).lower()}) ---\n{result['output']}"
            + (f"\nError: {result['error']}" if result["error"] else "")
            for target, result in zip(targets, results, strict=True)
        ]
        succeeded = all(result["success"] for result in results)
        output = f"[Parallel delegation: {len(targets)} agents]\n\n" + "\n\n".join(blocks)
        return tool_result(succeeded, output, None if succeeded else "One or more parallel agents failed")

    def _precheck(self, caller: Session, target: str, *, full_stop: bool) -> str | None:
        """The checks before the budget: an unknown target, the depth, the read-only level."""
        if target not in self._ctx.config.agents.list:
            return f"Unknown agent '{target}'. Available agents: {self._all_agents()}"
        limit = self._ctx.config.runtime_profile_of(target).delegation_depth
        if caller.depth >= limit:
            ending = " Cannot delegate further to prevent infinite loops." if full_stop else ""
            return f"Delegation depth limit reached ({caller.depth}/{limit}).{ending}"
        risk = self._ctx.config.risk_profile_of(caller.agent_id)
        if risk is not None and risk.level == "readonly":
            return "Security policy: read-only mode, cannot perform 'delegate'"
        return None

    def _admit(self, caller: Session, target: str) -> _Admitted | str:
        """The checks after the budget: the caller's policy and reach, then a target that asks for approvals."""
        if refusal := reach_refusal(self._ctx.config, caller.agent_id, target) or self._asks(caller, target):
            return refusal
        return _Admitted(target, reachable_targets(self._ctx.config, caller.agent_id)[target])

    def _asks(self, caller: Session, target: str) -> str | None:
        mode = reachable_targets(self._ctx.config, caller.agent_id).get(target, "bounded")
        return always_ask_refusal(self._ctx.config, caller.agent_id, target, mode)

    def _all_agents(self) -> str:
        return ", ".join(self._ctx.config.agents.list) or "(none configured)"

    async def _launch(
        self, caller: Caller, admitted: _Admitted, prompt: str, charged_to: str, *, background: bool
    ) -> DelegateTask:
        """The target's session, run and task record, in one transaction; then its deadline is watched."""
        caller_run = await self._ctx.repos.runs.get(caller.run_id)
        assert caller_run is not None, "a tool call comes from a run"
        target, session = admitted.target, caller.session
        agent = self._ctx.config.agents.list[target]
        runtime = self._ctx.config.runtime_profile_of(target)
        defaults = self._ctx.config.delegate
        if runtime.agentic:
            timeout = runtime.agentic_timeout_secs or defaults.agentic_timeout_secs
        else:
            timeout = runtime.delegation_timeout_secs or defaults.timeout_secs
        model = agent.model or self._ctx.config.agents.defaults.model
        now, origin = self._ctx.clock(), origin_of(caller_run)
        leaf = session.depth + 1 >= self._ctx.config.agents.defaults.subagents.max_spawn_depth
        child = delegated_session(
            session,
            target,
            SessionRole.LEAF if leaf else SessionRole.ORCHESTRATOR,
            prompt,
            origin,
            now,
            sandboxed=agent.sandboxed,
            delegation=Delegation.BOUNDED if admitted.mode == "bounded" else Delegation.INDEPENDENT,
            spawn_site=SpawnSite.DELEGATE,
            charged_to=charged_to,
        )
        run = new_run(child, RunKind.SPAWN, prompt, model, None, timeout, origin, caller_run.id, now)
        task = DelegateTask(
            task_id=str(uuid.uuid4()),
            run_id=run.id,
            caller_session_key=session.key,
            agent=target,
            header=agent_header(target, model, agentic=runtime.agentic),
            background=background,
            status=TaskStatus.RUNNING,
            started_at=now,
            deadline=now + timeout + DEADLINE_GRACE,
        )

        async def record(tx: Connection) -> None:
            await self._ctx.repos.delegate_tasks.insert(tx, task)

        await self._spawning.persist_and_queue(run, None, child, also=record)
        self._tasks.watch(task, timeout)
        log.info("delegated", target=target, mode=admitted.mode, background=background, task_id=task.task_id)
        return task

    async def _settled(self, task_id: str) -> DelegateTask:
        async def done() -> DelegateTask | None:
            task = await self._ctx.repos.delegate_tasks.get(task_id)
            return task if task is not None and task.status is not TaskStatus.RUNNING else None

        while (task := await self._ctx.signals.wait_for(done, _WAIT_STEP)) is None:
            pass
        return task


def _prompt(raw: dict[str, Any]) -> str | None:
    """The prompt, with the optional context ahead of it, as the contract composes them."""
    prompt, context = raw.get("prompt"), raw.get("context")
    if not isinstance(prompt, str):
        return None
    if isinstance(context, str) and context.strip() and prompt.strip():
        return f"[Context]\n{context.strip()}\n\n[Task]\n{prompt}"
    return prompt
