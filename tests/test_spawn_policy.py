"""The sessions_spawn validation chain: each refusal with its status and wording, and the defaults chain."""

from __future__ import annotations

import pytest

from bot.config import parse_config
from bot.core.errors import SpawnRefused
from bot.core.runs.spawn_policy import SpawnArgs, SpawnContext, SpawnPolicy
from bot.records import Run, RunKind, RunStatus, Session
from tests.core_support import ScriptedModels, text

CONFIG = """
[agents.defaults]
model = "test/base"
[agents.defaults.subagents]
max_spawn_depth = 2
max_children_per_agent = 3
run_timeout_seconds = 30
[agents.list.main]
subagents = { allow_agents = ["coder"] }
[agents.list.coder]
model = "test/coder"
subagents = { thinking = "low", run_timeout_seconds = 90 }
[agents.list.boxed]
sandboxed = true
[agents.list.strict]
subagents = { require_agent_id = true, allow_agents = ["*"] }
"""

MODELS = ScriptedModels(base=text("x"), coder=text("x"), fast=text("x"))


def session(agent="main", depth=0, sandboxed=False) -> Session:
    return Session(
        key=f"agent:{agent}:test",
        agent_id=agent,
        kind="main" if depth == 0 else "subagent",
        depth=depth,
        role="main" if depth == 0 else "orchestrator",
        requester_session_key=None,
        label=None,
        guild_id=1,
        channel_id=2,
        owner_user_id=3,
        created_at=0,
        sandboxed=sandboxed,
    )


def caller_run(model="test/base", thinking=None) -> Run:
    return Run(
        id="r",
        session_key="k",
        kind=RunKind.CHAT,
        status=RunStatus.RUNNING,
        task="t",
        model=model,
        thinking=thinking,
        timeout_seconds=0,
        requester_user_id=3,
        guild_id=1,
        channel_id=2,
        source_message_id=None,
        created_at=0,
    )


def plan(args: SpawnArgs, requester: Session | None = None, *, active=0, by_user=False, config=CONFIG):
    parsed = parse_config(config)
    policy = SpawnPolicy(parsed, MODELS)
    context = SpawnContext(requester or session(), caller_run(), active, by_user, parsed.thread_bindings())
    return policy.plan(args, context)


def refusal(args: SpawnArgs, requester: Session | None = None, **kw) -> tuple[str, str]:
    with pytest.raises(SpawnRefused) as caught:
        plan(args, requester, **kw)
    return caught.value.status, str(caught.value)


@pytest.mark.parametrize(
    ("args", "requester", "kw", "expected"),
    [
        (
            SpawnArgs(task="x", agent_id="Bad!"),
            None,
            {},
            (
                "error",
                'Invalid agentId "Bad!". Agent IDs must match [a-z0-9][a-z0-9_-]{0,63}. '
                "Use agents_list to discover valid targets.",
            ),
        ),
        (
            SpawnArgs(task="x", mode="session"),
            None,
            {},
            ("error", 'mode="session" requires thread=true so the subagent can stay bound to a thread.'),
        ),
        (
            SpawnArgs(task="x", thread=True),
            None,
            {},
            (
                "error",
                "Discord thread-bound subagent spawns are disabled "
                "(set channels.discord.thread_bindings.spawn_subagent_sessions = true to enable).",
            ),
        ),
        (
            SpawnArgs(task="x", thread=True),
            None,
            {"config": CONFIG + "[session.thread_bindings]\nenabled = false\n"},
            (
                "error",
                "Discord thread bindings are disabled (set channels.discord.thread_bindings.enabled = true to "
                "override for Discord, or session.thread_bindings.enabled = true globally).",
            ),
        ),
        (SpawnArgs(task="x", mode="forever"), None, {}, ("error", 'Invalid mode "forever". Use "run" or "session".')),
        (
            SpawnArgs(task="x"),
            session(depth=2),
            {},
            ("forbidden", "sessions_spawn is not allowed at this depth (current depth: 2, max: 2)"),
        ),
        (
            SpawnArgs(task="x"),
            None,
            {"active": 3},
            ("forbidden", "sessions_spawn has reached max active children for this session (3/3)"),
        ),
        (
            SpawnArgs(task="x"),
            session("strict"),
            {},
            (
                "error",
                "sessions_spawn requires explicit agentId when requireAgentId is configured. "
                "Use agents_list to see allowed agent ids.",
            ),
        ),
        (
            SpawnArgs(task="x", agent_id="boxed"),
            None,
            {},
            ("forbidden", "agentId is not allowed for sessions_spawn (allowed: coder)"),
        ),
        (
            SpawnArgs(task="x", agent_id="main"),
            session("coder", depth=1),
            {},
            ("forbidden", "agentId is not allowed for sessions_spawn (allowed: none)"),
        ),
        (
            SpawnArgs(task="x", agent_id="ghost"),
            session("strict"),
            {},
            ("error", 'Unknown agentId "ghost". Configured agents: boxed, coder, main, strict.'),
        ),
        (
            SpawnArgs(task="x", agent_id="coder"),
            None,
            {"config": CONFIG.replace("[agents.list.coder]\n", "[agents.list.coder]\nenabled = false\n")},
            ("forbidden", 'Agent "coder" is disabled (agents.list.coder.enabled = false).'),
        ),
        (
            SpawnArgs(task="x", agent_id="coder"),
            session("boxed", sandboxed=True, depth=1),
            {
                "config": CONFIG.replace(
                    "[agents.list.boxed]\nsandboxed = true",
                    '[agents.list.boxed]\nsandboxed = true\nsubagents = { allow_agents = ["*"] }',
                )
            },
            (
                "forbidden",
                "Sandboxed sessions cannot spawn unsandboxed subagents. "
                "Set a sandboxed target agent or use the same agent runtime.",
            ),
        ),
        (
            SpawnArgs(task="x", agent_id="coder", sandbox="require"),
            None,
            {},
            (
                "forbidden",
                'sessions_spawn sandbox="require" needs a sandboxed target runtime. '
                'Pick a sandboxed agentId or use sandbox="inherit".',
            ),
        ),
        (SpawnArgs(task="x", agent_id="coder", model="test/nope"), None, {}, ("error", "Unknown model 'test/nope'.")),
        (
            SpawnArgs(task="x", agent_id="coder", thinking="huge"),
            None,
            {},
            ("error", 'Invalid thinking level "huge". Use one of: off, minimal, low, medium, high, xhigh, max.'),
        ),
        (SpawnArgs(task=" "), None, {}, ("error", "Task must not be empty.")),
    ],
)
def test_each_refusal_has_its_status_and_message(args, requester, kw, expected):
    assert refusal(args, requester, **kw) == expected


def test_depth_check_comes_before_the_children_cap():
    assert refusal(SpawnArgs(task="x"), session(depth=2), active=9)[0] == "forbidden"
    assert "at this depth" in refusal(SpawnArgs(task="x"), session(depth=2), active=9)[1]


def test_defaults_chain_explicit_then_agent_then_defaults_then_caller():
    coder = plan(SpawnArgs(task="x", agent_id="coder"))
    assert (coder.model.reference, coder.thinking, coder.timeout_seconds) == ("test/coder", None, 90)
    # "low" thinking from [agents.list.coder.subagents] is dropped silently: the model cannot think
    explicit = plan(SpawnArgs(task="x", agent_id="coder", model="test/fast", run_timeout_seconds=12.9))
    assert (explicit.model.reference, explicit.timeout_seconds) == ("test/fast", 12)
    own = plan(SpawnArgs(task="x"))
    assert (own.agent_id, own.model.reference, own.timeout_seconds) == ("main", "test/base", 30)


def test_role_and_depth_are_decided_here_not_from_keys():
    first = plan(SpawnArgs(task="x"))
    assert (first.depth, first.role) == (1, "orchestrator")
    second = plan(SpawnArgs(task="x"), session(depth=1))
    assert (second.depth, second.role) == (2, "leaf")


def test_allow_star_and_users_bypass_allow_lists():
    assert plan(SpawnArgs(task="x", agent_id="coder"), session("strict")).agent_id == "coder"
    assert plan(SpawnArgs(task="x", agent_id="boxed"), by_user=True).agent_id == "boxed"


def test_cleanup_is_kept_as_asked_and_the_label_trimmed():
    planned = plan(SpawnArgs(task="x", label="  my label  ", cleanup="delete"))
    assert (planned.cleanup, planned.label, planned.mode) == ("delete", "my label", "run")
