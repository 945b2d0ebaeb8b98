"""A harness session's turn: its prompt sent to the session's ACP agent, its end told as any run's outcome.

The prompt and the agent's final message go to the session's transcript (so ``/subagents log`` shows them), the
agent's tool calls and plan to the run's activity line as they stream in, and its permission requests to the
run's owner or a moderator as Approve/Deny buttons (:meth:`bot.core.tools.approvals.Approvals.ask_live`). The
run's kill cancels the ACP prompt. ACP agents report no tokens the bot can price: the turn's usage is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import structlog
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from bot.agents.acp_client import AcpAgents, AcpReply
from bot.agents.runner import NO_OUTPUT, RunOutcome
from bot.core.context import CoreContext
from bot.records import Run, RunStatus, Session

log = structlog.get_logger(__name__)

_STATUS = {
    "completed": RunStatus.COMPLETED,
    "cancelled": RunStatus.KILLED,
    "timed_out": RunStatus.TIMED_OUT,
    "failed": RunStatus.FAILED,
}


class Asking(Protocol):
    """Asks the run's owner or a moderator to allow an agent's request.

    ``False`` when denied or unanswered."""

    async def ask_live(
        self, run: Run, session: Session, title: str, details: str, cancelled: Callable[[], bool]
    ) -> bool: ...


class _Hooks:
    """One turn's activity lines and permission questions, with the authority of the run's owner."""

    def __init__(self, ctx: CoreContext, asking: Asking, run: Run, session: Session, cancelled: Callable[[], bool]):
        self._ctx, self._asking = ctx, asking
        self._run, self._session, self._cancelled = run, session, cancelled
        self._shown: str | None = None

    async def activity(self, line: str) -> None:
        if line == self._shown:  # an agent repeating itself writes nothing
            return
        self._shown = line
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.run_activity.set(tx, self._run.id, self._ctx.redact.text(line), self._ctx.clock())
        self._ctx.signals.run_changed(self._run.id)

    async def permission(self, title: str, details: str) -> bool:
        title, details = self._ctx.redact.text(title), self._ctx.redact.text(details)
        return await self._asking.ask_live(self._run, self._session, title, details, self._cancelled)


class AcpTurns:
    """Runs harness sessions' turns on their ACP agents."""

    def __init__(self, ctx: CoreContext, agents: AcpAgents, asking: Asking) -> None:
        self._ctx = ctx
        self._agents = agents
        self._asking = asking

    async def turn(self, run: Run, session: Session, prompt: str, cancelled: Callable[[], bool]) -> RunOutcome:
        """Prompt the session's ACP agent and wait for its end (``cancelled`` is polled: a kill)."""
        assert session.acp_agent is not None, "a harness session names its ACP agent"
        asked: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(self._ctx.redact.text(prompt))])]
        await self._store(run, session, asked)
        hooks = _Hooks(self._ctx, self._asking, run, session, cancelled)
        timeout = run.timeout_seconds or None
        reply: AcpReply = await self._agents.prompt(session.key, session.acp_agent, prompt, hooks, cancelled, timeout)
        text = self._ctx.redact.text(reply.text)
        answered: list[ModelMessage] = [ModelResponse(parts=[TextPart(text)])] if text else []
        await self._store(run, session, answered, done=True)
        log.info("acp_turn_ended", agent=session.acp_agent, ending=reply.ending)
        error = (
            self._ctx.redact.text(reply.error) if reply.error else ("killed" if reply.ending == "cancelled" else None)
        )
        return RunOutcome(_STATUS[reply.ending], text or NO_OUTPUT, error, run.usage, asked + answered)

    async def _store(self, run: Run, session: Session, messages: list[ModelMessage], *, done: bool = False) -> None:
        async with self._ctx.repos.db.transaction() as tx:
            await self._ctx.repos.transcripts.append(tx, session.key, run.id, messages)
            if done:
                await self._ctx.repos.run_activity.clear(tx, run.id)
        self._ctx.signals.run_changed(run.id)

    async def close(self) -> None:
        """Stop every ACP agent process (the bot is stopping)."""
        await self._agents.close_all()
