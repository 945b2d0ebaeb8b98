"""A turn's tools, spending meter and approval pauses: the engine's :class:`~bot.core.runs.ports.TurnSetup`.

The engine asks here what a session's model may call and under which rules. The tools it is offered, its memory
(tools, and what is recalled into a top-level turn's prompt), the files it may return, its MCP servers, its policy
envelope's gate, its budgets and its paused calls all live in other rooms; this one puts them together for one turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model
from pydantic_ai.tools import DeferredToolResults

from bot.agents.metering import MeteredModel
from bot.agents.runner import RunOutcome
from bot.core.budgets.meter import Budgets
from bot.core.context import CoreContext
from bot.core.files.attached_files import ATTACH_FILE, AttachedFiles
from bot.core.memory.memory_tools import MemoryTurns
from bot.core.runs.announcements import is_voice_turn
from bot.core.runs.ports import TurnTools
from bot.core.runs.settlement import AfterCommit
from bot.core.tools.approvals import Approvals
from bot.core.tools.mcp_tools import McpTools
from bot.core.tools.policy_envelope import PolicyEnvelopes
from bot.core.tools.session_toolset import Caller, SessionControl, ToolDeps, session_toolset
from bot.core.tools.tool_gates import tool_gate
from bot.core.tools.tool_policy import offered_tools, usable_tools
from bot.records import Delegation, Run, Session
from storage.db import Connection

_DELEGATES = (Delegation.BOUNDED, Delegation.INDEPENDENT)  # their agentic loop stops at max_tool_iterations
STARTS_WORK = frozenset({"sessions_spawn", "spawn_subagent", "delegate", "sessions_send"})


class TurnSetups:
    """Builds each turn's tools and meter from the session's policy, and pauses for approvals."""

    def __init__(
        self,
        ctx: CoreContext,
        control: SessionControl,
        mcp: McpTools,
        envelopes: PolicyEnvelopes,
        approvals: Approvals,
        budgets: Budgets,
        memory: MemoryTurns,
        files: AttachedFiles,
    ) -> None:
        self._ctx = ctx
        self._control = control
        self._mcp = mcp
        self._envelopes = envelopes
        self._approvals = approvals
        self._budgets = budgets
        self._memory = memory
        self._files = files

    async def tools(self, run: Run, session: Session) -> TurnTools:
        """What the turn may call. A voice turn tells; it starts no work, so a result never leads to another
        without someone asking."""
        runtime = self._ctx.config.runtime_profile_of(session.agent_id)
        offered = await self._offered(session)
        voice = is_voice_turn(run)
        envelope = await self._envelopes.effective(session, run)
        # a voice turn tells a result: it neither recalls for, nor saves, what a member did not say
        memory, recalled, scope = ([], "", None) if voice else await self._memory.setup(run, session, envelope.admits)
        # a delegate's (or spawn_subagent child's) result goes back to its caller, not to a channel: no files
        returns_files = session.delegation is None and envelope.admits(ATTACH_FILE)
        file_tool = self._files.tool() if returns_files else None
        toolset = session_toolset(offered - STARTS_WORK if voice else offered, [*memory, *filter(None, [file_tool])])
        return TurnTools(
            toolsets=([toolset] if toolset else []) + await self._mcp.toolsets(session),
            deps=ToolDeps(control=self._control, caller=Caller(session=session, run_id=run.id), memory_scope=scope),
            gate=tool_gate(envelope, self._ctx.config),
            parallel_tools=bool(runtime.parallel_tools),
            request_limit=runtime.tool_iterations if session.delegation in _DELEGATES else None,
            dedup_exempt=frozenset(runtime.tool_call_dedup_exempt),
            context=recalled,
        )

    def metered(self, model: Model, run: Run, session: Session) -> Model:
        return MeteredModel(model, self._budgets.meter(run))

    async def record(self, tx: Connection, run: Run, session: Session, messages: Sequence[ModelMessage]) -> bool:
        return await self._budgets.record(tx, run, session, messages)

    async def pause(self, run: Run, session: Session, outcome: RunOutcome) -> AfterCommit:
        return await self._approvals.pause(run, session, outcome)

    async def decisions(self, run_id: str) -> DeferredToolResults | None:
        return await self._approvals.take_decisions(run_id)

    async def _offered(self, session: Session) -> frozenset[str]:
        """The session's tools; a bounded delegate's never exceed its caller's."""
        if session.delegation is not Delegation.BOUNDED:
            return offered_tools(self._ctx.config, session)
        caller = await self._ctx.repos.sessions.get(session.requester_session_key or "")
        ceiling = usable_tools(self._ctx.config, caller, await self._offered(caller)) if caller else frozenset()
        return offered_tools(self._ctx.config, session, ceiling)
