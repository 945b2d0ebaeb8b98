"""Agent profiles as the config declares them, and the ``delegate`` tool's default timeouts.

``[risk_profiles.<name>]``: which tools an agent may use, whether it may delegate, what it must ask before.
``[runtime_profiles.<name>]``: how an agent runs (iterations, delegation depth and timeouts, parallel tools, its
action budget). ``[delegate]``: default timeouts of the ``delegate`` tool.

The lineage, said here once: the bot follows two agent runtimes. From OpenClaw: the agents list, sub-agent sessions
(``sessions_spawn``, thread spawns), the tools a session's depth gives it, per-agent keys. From ZeroClaw: risk and
runtime profiles, ``spawn_subagent`` and ``delegate``, action and cost budgets, a child never holding more than its
parent, the rules for one response's tool calls. Their profile names, defaults and meanings are kept as ZeroClaw's
code has them (where its documentation differs, the code wins), and the tools' answers and refusals keep both
projects' words. Everywhere else the project names these things in its own words.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

DEFAULT_MAX_TOOL_ITERATIONS = 10  # what ``max_tool_iterations = 0`` (inherit) resolves to
DEFAULT_MAX_DELEGATION_DEPTH = 3  # what ``max_delegation_depth = 0`` resolves to


class Section(BaseModel):
    """A config table: unknown keys are errors (named by the loader), values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DelegationPolicy(Section):
    mode: Literal["forbidden", "allow"] = "forbidden"


class RiskProfile(Section):
    level: Literal["readonly", "supervised", "full"] = "supervised"
    allowed_tools: list[str] = Field(default_factory=list)  # empty: no constraint
    excluded_tools: list[str] = Field(default_factory=list)
    delegation_policy: DelegationPolicy = DelegationPolicy()
    always_ask: list[str] = Field(default_factory=list)  # tools that need a person's approval at every call

    def allows(self, tool: str) -> bool:
        return (not self.allowed_tools or tool in self.allowed_tools) and tool not in self.excluded_tools

    def admits_mcp(self, tool: str) -> bool:
        """Whether an MCP tool (``<server>__<tool>``) is admitted: unless excluded.

        Excluded wins; a non-empty ``allowed_tools`` does not constrain MCP tools, it admits them automatically."""
        return tool not in self.excluded_tools


Seconds = Annotated[int, Field(ge=1)]


class RuntimeProfile(Section):
    agentic: bool = False
    max_tool_iterations: Annotated[int, Field(ge=0)] = 0  # 0: inherit (10)
    max_delegation_depth: Annotated[int, Field(ge=0)] = 0  # 0: the default (3)
    delegation_timeout_secs: Seconds | None = None  # None: [delegate].timeout_secs
    agentic_timeout_secs: Seconds | None = None  # None: [delegate].agentic_timeout_secs
    parallel_tools: bool | None = None  # None: sequential
    max_actions_per_hour: Annotated[int, Field(ge=0)] = 20  # 0: no actions at all
    max_cost_per_day_cents: Annotated[int, Field(ge=0)] = 500  # what the agent may spend a day; 0: nothing
    tool_call_dedup_exempt: list[str] = Field(default_factory=list)

    @property
    def tool_iterations(self) -> int:
        return self.max_tool_iterations or DEFAULT_MAX_TOOL_ITERATIONS

    @property
    def delegation_depth(self) -> int:
        return self.max_delegation_depth or DEFAULT_MAX_DELEGATION_DEPTH


class DelegateToolConfig(Section):
    timeout_secs: Seconds = 120
    agentic_timeout_secs: Seconds = 300


class DelegateEntry(Section):
    """One agent this agent may ``delegate`` to: ``bounded`` (within the caller's own tools and budget) or
    ``independent`` (with the target's own)."""

    agent: str
    mode: Literal["bounded", "independent"] = "bounded"


def _entry(value: Any) -> Any:
    """A bare string names a bounded delegate."""
    return {"agent": value, "mode": "bounded"} if isinstance(value, str) else value


Delegate = Annotated[DelegateEntry, BeforeValidator(_entry)]


def delegate_problems(agent_id: str, delegates: list[DelegateEntry], configured: set[str]) -> list[str]:
    """Problems with an agent's ``delegates``: empty, itself, not configured, or repeated.

    Each is one line naming the config key."""
    problems = []
    seen: set[str] = set()
    for index, entry in enumerate(delegates):
        key = f"agents.list.{agent_id}.delegates[{index}].agent"
        target = entry.agent.strip()
        if not target:
            problems.append(f"{key} is empty; remove it or name a configured agent")
        elif target == agent_id:
            problems.append(f'{key} = "{target}" names this agent itself; an agent cannot delegate to itself')
        elif target not in configured:
            problems.append(f'{key} = "{target}" but agents.list.{target} is not configured')
        elif target in seen:
            problems.append(f'{key} = "{target}" duplicates an earlier delegate target')
        seen.add(target)
    return problems
