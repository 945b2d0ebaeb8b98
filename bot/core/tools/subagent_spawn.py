"""The ``spawn_subagent`` tool: an ephemeral run of the calling agent itself — same identity, model and risk
profile, its own session (so its turns never enter the caller's history) — that the caller's tool call waits
for and whose final text is that call's result. Nothing is announced; the channel sees the caller's answer.

The model reads bare text, as the tool's contract gives it: the child's final text (a placeholder when empty), or a
refusal's words. Guards run in the contract's order, with its words (:mod:`bot.profiles`): the prompt (checked by
the tool), the depth-1 cap, the risk profile, the read-only level, building the child's model, then
the action budget (:mod:`bot.core.tools.action_budget`, shared with the caller's own caller when the caller is
itself a bounded delegate). A child that cannot be built costs no action: nothing was launched.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import structlog

from bot.agents.models import ModelFactory
from bot.agents.runner import final_text
from bot.core.context import CoreContext
from bot.core.durable.durable_runs import step
from bot.core.errors import UserError
from bot.core.memory.scope import MemoryScopes, override_refusal
from bot.core.runs.requests import delegated_session, new_run, origin_of
from bot.core.runs.spawning import Spawning
from bot.core.tools.action_budget import ActionBudget, BudgetExhausted
from bot.core.tools.session_toolset import EMPTY_PROMPT, Caller
from bot.core.tools.tool_policy import SPAWN_SUBAGENT
from bot.records import (
    Delegation,
    Run,
    RunKind,
    RunStatus,
    Session,
    SessionRole,
    SpawnSite,
)

DEPTH_CAP = "spawn_subagent: a subagent may not spawn its own subagents (depth-1 cap)"
READ_ONLY = "Security policy: read-only mode, cannot perform 'spawn_subagent'"
NO_OUTPUT_RESULT = "subagent completed without output"
SPAWN_FAILED = "subagent spawn failed: "
_WAIT_STEP = 3600.0  # no deadline of its own: the caller waits as long as the child runs

log = structlog.get_logger(__name__)


def _refused(error: str) -> dict[str, Any]:
    """A refusal as the launch step journals it (the shape earlier journals hold too)."""
    return {"status": "error", "error": error}


class SubagentSpawn:
    def __init__(
        self,
        ctx: CoreContext,
        spawning: Spawning,
        budget: ActionBudget,
        models: ModelFactory,
        scopes: MemoryScopes,
    ) -> None:
        self._ctx = ctx
        self._spawning = spawning
        self._budget = budget
        self._models = models
        self._scopes = scopes

    async def spawn(self, caller: Caller, prompt: str, memory_from: list[str] | None = None) -> str:
        """Guard and launch the child in one durable step, then wait for it; the text the model reads.

        A run resumed after a crash waits for the child it launched before, and launches no other."""
        started = await step("spawn_subagent", self._start, caller, prompt, memory_from)
        if isinstance(started, dict):
            return str(started["error"])
        child = await self._finished(started)
        if child.status is RunStatus.COMPLETED:
            answer = final_text(await self._ctx.repos.transcripts.for_run(started))
            return answer or NO_OUTPUT_RESULT
        return f"subagent run failed: {child.error or child.status.word}"

    async def _start(self, caller: Caller, prompt: str, memory_from: list[str] | None) -> dict[str, Any] | str:
        """The child's run id, or the refusal that stops it.

        The tool checked the prompt already; it is checked again for any other caller. A ``memory_from`` override
        may only narrow the caller's memory allowlist: an alias outside it is refused by name."""
        session = caller.session
        if session.delegation is Delegation.SUBAGENT:
            return _refused(DEPTH_CAP)
        risk = self._ctx.config.risk_profile_of(session.agent_id)
        if risk is not None and not risk.allows(SPAWN_SUBAGENT):
            return _refused(
                f"spawn_subagent: refused — agent '{session.agent_id}' risk_profile does not list spawn_subagent "
                "in allowed_tools"
            )
        if not prompt.strip():
            return _refused(EMPTY_PROMPT)
        if risk is not None and risk.level == "readonly":
            return _refused(READ_ONLY)
        if memory_from is not None:
            allowed = await self._scopes.allowlist(session)
            if outside := next((alias for alias in memory_from if alias not in allowed), None):
                return _refused(override_refusal(outside))
        caller_run = await self._ctx.repos.runs.get(caller.run_id)
        assert caller_run is not None, "a tool call comes from a run"
        if (unbuildable := self._unbuildable(session.agent_id, caller_run.model)) is not None:
            return _refused(SPAWN_FAILED + self._ctx.redact.text(unbuildable))
        try:
            async with self._budget.charge(session) as charged_to:
                run_id = await self._launch(session, caller_run, prompt.strip(), charged_to, memory_from)
        except (BudgetExhausted, UserError) as refused:  # a caller that ended, a budget that is spent
            return _refused(str(refused))
        log.info("subagent_spawned", child_run_id=run_id)
        return run_id

    def _unbuildable(self, agent_id: str, model: str) -> str | None:
        """Why the child's model cannot be built now, or ``None``.

        The model, its fallbacks and keys are built before launching: the caller reads why, not a child failing
        at once."""
        try:
            self._models.chain(model, agent=agent_id)
        except Exception as exc:  # any fault building the model: the model reads why, the caller's turn goes on
            return str(exc) or type(exc).__name__
        return None

    async def _launch(
        self, caller: Session, caller_run: Run, prompt: str, charged_to: str, memory_from: list[str] | None
    ) -> str:
        """The child: the same agent on its caller's model and thinking, a leaf, archived once done; its memory
        allowlist its caller's, or the narrower one asked for."""
        now = self._ctx.clock()
        origin = origin_of(caller_run)
        child = delegated_session(
            caller,
            caller.agent_id,
            SessionRole.LEAF,
            prompt,
            origin,
            now,
            sandboxed=caller.sandboxed,
            delegation=Delegation.SUBAGENT,
            spawn_site=SpawnSite.TOOL,
            charged_to=charged_to,
        )
        run = new_run(
            child, RunKind.SPAWN, prompt, caller_run.model, caller_run.thinking, 0, origin, caller_run.id, now
        )
        narrowed = None
        if memory_from is not None:
            narrowed = partial(self._ctx.repos.memories.narrow, session_key=child.key, agents=sorted(set(memory_from)))
        await self._spawning.persist_and_queue(run, None, child, also=narrowed)
        return run.id

    async def _finished(self, run_id: str) -> Run:
        async def settled() -> Run | None:
            run = await self._ctx.repos.runs.get(run_id)
            return run if run is not None and run.status.is_terminal else None

        while (run := await self._ctx.signals.wait_for(settled, _WAIT_STEP)) is None:
            pass
        return run
