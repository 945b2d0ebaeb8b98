"""The schemas and descriptions the model sees for tools the core checks itself.

They are ``sessions_spawn``, ``spawn_subagent`` and ``delegate``; the words are the tools' contract words
(:mod:`bot.profiles` says whose)."""

from __future__ import annotations

from typing import Any

AGENT_DESCRIPTION = "Name of the agent to delegate to."

SPAWN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "description": "What the sub-agent should do (required)."},
        "label": {"type": "string", "description": "Short name shown in lists and announcements."},
        "runtime": {
            "type": "string",
            "enum": ["subagent", "acp"],
            "description": "subagent (default) or acp: an ACP harness session (a coding agent); agentId names it.",
        },
        "agentId": {"type": "string", "description": "Agent to run; default your own. See agents_list."},
        "model": {"type": "string", "description": "Model as <provider>/<model>; default from config."},
        "thinking": {"type": "string", "enum": ["off", "minimal", "low", "medium", "high", "xhigh", "max"]},
        "runTimeoutSeconds": {"type": "number", "minimum": 0, "description": "Abort after N seconds; 0 = none."},
        "thread": {"type": "boolean", "description": "Bind the sub-agent session to a Discord thread."},
        "mode": {"type": "string", "enum": ["run", "session"], "description": "run = one-shot (default)."},
        "cleanup": {"type": "string", "enum": ["keep", "delete"], "description": "Archive right after announcing."},
        "sandbox": {"type": "string", "enum": ["inherit", "require"]},
    },
    "required": ["task"],
}


SPAWN_SUBAGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "prompt": {
            "type": "string",
            "description": "The task or question for the SubAgent. Be specific and self-contained — the SubAgent "
            "does not see this conversation's history.",
        },
        "memory_from": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Optional: the agents whose memories the SubAgent may recall, narrowed from yours (your "
            "own are always included). Default: the same as yours.",
        },
    },
    "required": ["prompt"],
}


DELEGATE_DESCRIPTION = (
    "Delegate a subtask to a specialized agent. Use when: a task benefits from a different model (e.g. fast "
    "summarization, deep reasoning, code generation). The sub-agent runs a single prompt by default; with "
    "agentic=true it can iterate with a filtered tool-call loop. Supports background execution (returns a task_id "
    "immediately), batched background waits (await_sessions), and parallel execution (runs multiple agents "
    "concurrently)."
)
DELEGATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [],
    "properties": {
        "action": {
            "type": "string",
            "enum": ["delegate", "check_result", "list_results", "cancel_task", "await_sessions"],
            "default": "delegate",
            "description": "Action to perform. Default: 'delegate'. Use 'check_result' to retrieve a background task "
            "result, 'await_sessions' to wait for multiple background results, 'list_results' to list all "
            "background tasks, 'cancel_task' to cancel a running background task.",
        },
        "agent": {"type": "string", "minLength": 1, "description": AGENT_DESCRIPTION},
        "prompt": {"type": "string", "minLength": 1, "description": "The task/prompt to send to the sub-agent"},
        "context": {
            "type": "string",
            "description": "Optional context to prepend (e.g. relevant code, prior findings)",
        },
        "background": {
            "type": "boolean",
            "default": False,
            "description": "When true, the sub-agent runs in the background and returns a task_id immediately. "
            "Its result is kept as a task record: retrieve it with check_result.",
        },
        "parallel": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Array of agent names to run concurrently with the same prompt. Returns all results when "
            "all agents complete. Cannot be combined with 'background'.",
        },
        "task_id": {
            "type": "string",
            "description": "Task ID for check_result/cancel_task actions (returned by background delegation).",
        },
        "task_ids": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": 128,
            "description": "Task IDs for await_sessions.",
        },
        "timeout_ms": {
            "type": "integer",
            "minimum": 0,
            "maximum": 120000,
            "description": "Maximum milliseconds for await_sessions to wait before returning partial results. "
            "Capped at 120000.",
        },
    },
}
