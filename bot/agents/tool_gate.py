"""What stands between a model's tool call and the tool: read-only refusals and approvals.

A read-only agent's calls that would act are refused with the security-policy sentence the model is told, and a
call its risk profile names in ``always_ask`` is not run but deferred (pydantic-ai's ``ApprovalRequired``): the turn
ends with it pending, and runs it only when a later turn brings a person's approval."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

DENIED = "The user denied this tool call."
TIMED_OUT = "The user denied this tool call: nobody approved it in time."

Refuses = Callable[[str, dict[str, Any], ToolDefinition], bool]


def read_only_refusal(tool: str) -> str:
    return f"Security policy: read-only mode, cannot perform '{tool}'"


def _always(name: str, args: dict[str, Any], tool: ToolDefinition) -> bool:
    return True


@dataclass(frozen=True)
class ToolGate:
    always_ask: frozenset[str] = frozenset()
    read_only: bool = False
    read_only_refuses: Refuses = _always  # whether a read-only agent's call is refused here (it would act)


@dataclass
class GatedToolset(WrapperToolset[Any]):
    gate: ToolGate = field(default_factory=ToolGate)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if self.gate.read_only and self.gate.read_only_refuses(name, tool_args, tool.tool_def):
            return read_only_refusal(name)
        if name in self.gate.always_ask and not ctx.tool_call_approved:
            raise ApprovalRequired
        return await self.wrapped.call_tool(name, tool_args, ctx, tool)
