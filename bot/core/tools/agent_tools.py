"""The core's side of the agent-facing session tools (:class:`bot.core.tools.session_toolset.SessionControl`): what
``sessions_spawn``, ``agents_list``, ``sessions_*`` and ``subagents`` do for the calling session. Refusals come
back as ``{"status": ..., "error": ...}`` data for the model to read, never as exceptions."""

from __future__ import annotations

from typing import Any

import structlog

from bot.core.context import CoreContext
from bot.core.errors import UnknownTarget, UserError
from bot.core.oversight.run_actions import NotActionable, descendants, kill_refusal, steer_refusal
from bot.core.oversight.run_authority import Forbidden, RunAuthority
from bot.core.oversight.session_queries import SessionQueries, run_label
from bot.core.runs.commands import RunCommands
from bot.core.runs.requests import origin_of
from bot.core.runs.spawn_policy import SpawnArgs, SpawnPolicy
from bot.core.runs.spawning import Spawning
from bot.core.tools.session_toolset import Caller
from bot.records import ControlScope, Run, RunStatus
from bot.text import quoted

SPAWN_NOTE = (
    "Auto-announce is push-based: do not poll with sessions_list or sessions_history. The result arrives as an "
    "internal completion event in this session. If your turn ends before all your children finish, you are woken "
    "with their results once every one has settled; give your final answer only after all expected completions "
    "arrive. If a completion arrives after your final answer, reply ONLY with NO_REPLY."
)

log = structlog.get_logger(__name__)


def _error(message: str) -> dict[str, Any]:
    return {"status": "error", "error": message}


def _refuse_control(caller: Caller) -> dict[str, Any] | None:
    """Control scope is stored with the session at creation; a leaf controls nothing, whatever it is offered."""
    if caller.session.control_scope != ControlScope.CHILDREN:
        return {"status": "forbidden", "error": "Leaf subagents cannot control other sessions."}
    return None


class AgentTools:
    def __init__(
        self,
        ctx: CoreContext,
        queries: SessionQueries,
        policy: SpawnPolicy,
        spawning: Spawning,
        runs: RunCommands,
        authority: RunAuthority,
    ) -> None:
        self._ctx = ctx
        self._queries = queries
        self._policy = policy
        self._spawning = spawning
        self._runs = runs
        self._authority = authority

    async def tool_spawn(self, caller: Caller, args: SpawnArgs) -> dict[str, Any]:
        requester = await self._ctx.repos.sessions.get(caller.session.key)
        requester_run = await self._ctx.repos.runs.get(caller.run_id)
        assert requester is not None and requester_run is not None, "a tool call comes from a live run"
        try:
            accepted = await self._spawning.spawn_for(requester, requester_run, args)
        except UserError as refused:
            log.info("spawn_refused", status=refused.status, error=str(refused))
            return {"status": refused.status, "error": str(refused)}
        result = {
            "status": "accepted",
            "runId": accepted.run_id,
            "childSessionKey": accepted.session_key,
            "mode": accepted.mode,
            "note": SPAWN_NOTE,
        }
        if accepted.warning:
            log.info("spawn_model_dropped", run_id=accepted.run_id, warning=accepted.warning)
            result["warning"] = accepted.warning
        return result

    async def tool_agents_list(self, caller: Caller) -> dict[str, Any]:
        allowed = self._policy.allowed_targets(caller.session.agent_id)
        agents = self._ctx.config.agents.list
        ids = [a for a in (sorted(agents) if "*" in allowed else allowed) if a in agents and agents[a].enabled]
        return {
            "requester": caller.session.agent_id,
            "allowAny": "*" in allowed,
            "agents": [{"id": a, "name": agents[a].name or a, "sandboxed": agents[a].sandboxed} for a in ids],
        }

    async def tool_sessions_list(self, caller: Caller) -> dict[str, Any]:
        if refused := _refuse_control(caller):
            return refused
        rows = await self._queries.children(caller.session.key)
        return {"sessions": [row.as_dict(index) for index, row in enumerate(rows, start=1)]}

    async def tool_sessions_history(
        self, caller: Caller, session_key: str, limit: int, include_tools: bool
    ) -> dict[str, Any]:
        if refused := _refuse_control(caller):
            return refused
        if await self._queries.own_child(caller.session.key, session_key) is None:
            return _error(f"Unknown session '{quoted(session_key)}': not one of your sub-agents.")
        return {"sessionKey": session_key, "messages": await self._queries.history(session_key, limit, include_tools)}

    async def tool_sessions_send(self, caller: Caller, session_key: str, message: str) -> dict[str, Any]:
        if refused := _refuse_control(caller):
            return refused
        child = await self._queries.own_child(caller.session.key, session_key)
        if child is None:
            return _error(f"Unknown session '{quoted(session_key)}': not one of your sub-agents.")
        latest = await self._ctx.repos.runs.latest_for_session(session_key)
        if refused := await self._forbidden(caller, latest, run_label(child), "send", message):
            return refused
        if latest is not None and latest.status is RunStatus.WAITING_CHILDREN:
            return _error(f"Session {session_key} is waiting on its children; message them.")
        if latest is not None and steer_refusal(latest) is None and await self._runs.steer(latest.id, message):
            return {"status": "accepted", "runId": latest.id, "delivered": "steered into the running run"}
        # the follow-up answers to the session's owner, whoever's turn sent it (a moderator's included)
        origin = origin_of(latest) if latest else None
        try:
            run_id = await self._runs.follow_up(child, message, latest, parent_run_id=caller.run_id, origin=origin)
        except UserError as refused:  # archived, or a spawn_subagent run
            return _error(str(refused))
        return {"status": "accepted", "runId": run_id, "delivered": "started a follow-up run"}

    async def tool_model_switch(self, caller: Caller, model: str) -> dict[str, Any]:
        """Switch the main agent's own session to ``model`` from its next turn.

        Only a configured model is taken."""
        configured = self._ctx.config.configured_models()
        reference = model.strip()
        if reference not in configured:
            return _error(f"Unknown model '{quoted(reference)}'. Configured models: {', '.join(configured)}.")
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.sessions.set_model(tx, caller.session.key, reference)
        log.info("model_switched", session_key=caller.session.key, model=reference)
        return {"status": "ok", "model": reference, "note": "Applies from your next turn."}

    async def tool_subagents(
        self, caller: Caller, action: str, target: str | None, message: str | None
    ) -> dict[str, Any]:
        if refused := _refuse_control(caller):
            return refused
        rows = await self._queries.children(caller.session.key)
        if action == "list":
            return {"subagents": [row.as_dict(index) for index, row in enumerate(rows, start=1)]}
        if not target:
            return _error(f"Missing subagent id for {action}.")
        try:
            row = self._queries.resolve_target(rows, target)
        except UnknownTarget as missing:
            return _error(str(missing))
        if row.run is None or kill_refusal(row.run) is NotActionable.FINISHED:
            return _error(f"{row.label} is already finished.")
        if refused := await self._forbidden(caller, row.run, row.label, action, message):
            return refused
        if action == "kill":
            count = descendants(await self._runs.kill(row.run.id))
            if count is None:
                return _error(f"{row.label} is already finished.")
            suffix = f" (+ {count} descendant(s))" if count else ""
            return {"status": "ok", "result": f"killed {row.label}{suffix}."}
        if not message or not message.strip():
            return _error("steer needs a message.")
        if steer_refusal(row.run) is NotActionable.WAITING:
            return _error(f"{row.label} is waiting on its children; steer them instead.")
        if not await self._runs.steer(row.run.id, message.strip()):
            return _error(f"{row.label} is already finished.")
        return {"status": "ok", "result": f"steered {row.label} (run {row.run.short_id})."}

    async def _forbidden(
        self, caller: Caller, run: Run | None, label: str, action: str, detail: str | None
    ) -> dict[str, Any] | None:
        """Refuse unless the person whose turn calls the tool may ``action`` the run.

        The check is the one their slash command would pass."""
        if run is None:
            return None
        try:
            await self._authority.check_turn(await self._ctx.repos.runs.get(caller.run_id), run, label, action, detail)
        except Forbidden as refused:
            log.info("tool_forbidden", action=action, run_id=run.id, error=str(refused))
            return {"status": refused.status, "error": str(refused)}
        return None
