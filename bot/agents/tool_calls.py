"""How one model response's tool calls run: duplicates skipped, concurrent only with ``parallel_tools``.

A call repeating an earlier call of the same response with identical arguments is skipped, not executed
(``spawn_subagent``, ``delegate`` and the runtime profile's ``tool_call_dedup_exempt`` may repeat); the batch runs
concurrently only with the runtime profile's ``parallel_tools``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

REENTRANT_TOOLS = frozenset({"spawn_subagent", "delegate"})


def skipped_duplicate(name: str) -> str:
    return f"Skipped duplicate tool call '{name}' with identical arguments in this turn."


@dataclass
class DeduplicatedToolset(WrapperToolset[Any]):
    exempt: frozenset[str] = frozenset()
    seen: set[tuple[int, str, str]] = field(default_factory=set)  # shared by the copies pydantic-ai makes

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        key = name.strip().lower()
        if key not in REENTRANT_TOOLS and key not in {name.strip().lower() for name in self.exempt}:
            signature = (ctx.run_step, key, json.dumps(tool_args, sort_keys=True, default=str))
            if signature in self.seen:
                return skipped_duplicate(name)
            self.seen.add(signature)
        return await self.wrapped.call_tool(name, tool_args, ctx, tool)
