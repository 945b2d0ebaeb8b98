"""The policy envelope's rule, axis by axis (ZeroClaw's ``ensure_no_escalation_*`` tests, ported to the axes that
exist here): an identical child is accepted, a narrowed one is accepted, each widening is refused with its words, and
the first failing check wins."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.config import parse_config
from bot.core.tools.policy_envelope import Envelope, envelope_of

PARENT = Envelope(
    level="supervised",
    allowed_tools=frozenset({"sessions_spawn", "sessions_list", "spawn_subagent"}),
    excluded_tools=frozenset({"calc__die"}),
    mcp_servers=frozenset({"calc"}),
    always_ask=frozenset({"calc__add"}),
    max_actions_per_hour=20,
    run_timeout_seconds=300,
    max_cost_per_day_cents=500,
)
UNRESTRICTED = Envelope("full", None, frozenset(), frozenset(), frozenset(), 20, 0)


def test_an_identical_child_is_accepted():
    assert replace(PARENT).escalation_beyond(PARENT) is None


@pytest.mark.parametrize(
    "narrower",
    [
        {"level": "readonly"},
        {"allowed_tools": frozenset({"sessions_list"})},
        {"excluded_tools": frozenset({"calc__die", "calc__shout"})},
        {"mcp_servers": frozenset()},
        {"always_ask": frozenset({"calc__add", "calc__shout"})},
        {"max_actions_per_hour": 5},
        {"run_timeout_seconds": 60},
        {"max_cost_per_day_cents": 100},
        {"mcp_servers": frozenset(), "always_ask": frozenset()},  # a dropped ask for a tool it cannot call
    ],
    ids=lambda changes: ",".join(changes),
)
def test_a_narrowed_child_is_accepted(narrower):
    assert replace(PARENT, **narrower).escalation_beyond(PARENT) is None


@pytest.mark.parametrize(
    ("wider", "violation"),
    [
        ({"level": "full"}, "subagent autonomy=full exceeds parent's supervised"),
        ({"allowed_tools": None}, "subagent allowed_tools is unrestricted but the parent restricts it"),
        (
            {"allowed_tools": frozenset({"sessions_list", "sessions_send"})},
            'subagent allowed_tools entry "sessions_send" is not admitted by the parent\'s tools',
        ),
        ({"excluded_tools": frozenset()}, 'subagent drops excluded_tools entry "calc__die" that the parent enforces'),
        (
            {"mcp_servers": frozenset({"calc", "web"})},
            'subagent mcp_servers entry "web" is not present on the parent\'s mcp_servers',
        ),
        ({"always_ask": frozenset()}, 'subagent drops always_ask entry "calc__add" that the parent enforces'),
        ({"max_actions_per_hour": 21}, "subagent max_actions_per_hour=21 exceeds parent's 20"),
        ({"max_cost_per_day_cents": 501}, "subagent max_cost_per_day_cents=501 exceeds parent's 500"),
        ({"run_timeout_seconds": 301}, "subagent run_timeout_seconds=301 exceeds parent's 300"),
        ({"run_timeout_seconds": 0}, "subagent run_timeout_seconds=0 (no limit) exceeds parent's 300"),
    ],
    ids=lambda value: ",".join(value) if isinstance(value, dict) else "",
)
def test_each_widening_is_refused_in_its_words(wider, violation):
    assert replace(PARENT, **wider).escalation_beyond(PARENT) == violation


def test_the_first_failing_check_wins():
    child = replace(PARENT, level="full", max_actions_per_hour=99, mcp_servers=frozenset({"web"}))
    assert child.escalation_beyond(PARENT) == "subagent autonomy=full exceeds parent's supervised"


def test_a_parent_without_limits_accepts_any_child_on_its_servers():
    assert PARENT.escalation_beyond(replace(UNRESTRICTED, mcp_servers=frozenset({"calc"}))) is None
    assert UNRESTRICTED.escalation_beyond(UNRESTRICTED) is None


def test_narrowing_takes_the_lower_bound_and_every_refusal():
    child = Envelope("full", None, frozenset({"x"}), frozenset({"calc", "web"}), frozenset({"y"}), 50, 0, 900)
    assert child.narrowed(replace(PARENT, max_cost_per_day_cents=300)) == Envelope(
        level="supervised",
        allowed_tools=PARENT.allowed_tools,
        excluded_tools=frozenset({"x", "calc__die"}),
        mcp_servers=frozenset({"calc"}),
        always_ask=frozenset({"y", "calc__add"}),
        max_actions_per_hour=20,
        run_timeout_seconds=300,
        max_cost_per_day_cents=300,
    )
    assert child.narrowed(PARENT).escalation_beyond(PARENT) is None


def test_an_agents_envelope_comes_from_its_profiles_and_servers():
    config = parse_config(
        """
[mcp.servers.calc]
command = "calc"
[agents.list.main]
[agents.list.boss]
risk_profile = "tight"
runtime_profile = "slow"
mcp_servers = ["calc"]
[risk_profiles.tight]
level = "readonly"
allowed_tools = ["sessions_list"]
excluded_tools = ["calc__die"]
always_ask = ["calc__add", " "]
[runtime_profiles.slow]
max_actions_per_hour = 3
max_cost_per_day_cents = 250
"""
    )
    assert envelope_of(config, "boss", 60) == Envelope(
        "readonly",
        frozenset({"sessions_list"}),
        frozenset({"calc__die"}),
        frozenset({"calc"}),
        frozenset({"calc__add"}),
        3,
        60,
        250,
    )
    assert envelope_of(config, "main") == UNRESTRICTED
    assert envelope_of(config, "boss").admits("calc__add") and not envelope_of(config, "boss").admits("calc__die")
    assert not envelope_of(config, "boss").admits("sessions_spawn")
    assert not envelope_of(config, "main").admits("calc__add")  # main lists no server


def test_an_agent_naming_no_runtime_profile_has_no_cost_cap_to_narrow():
    config = parse_config(
        """
[agents.list.main]
[agents.list.spender]
runtime_profile = "rich"
[runtime_profiles.rich]
max_cost_per_day_cents = 1000
"""
    )
    main, spender = envelope_of(config, "main"), envelope_of(config, "spender")
    assert spender.escalation_beyond(main) is None  # main's spending has no cap of its own
    assert main.escalation_beyond(spender) is None  # nor is main's, under any parent
    assert main.narrowed(spender).max_cost_per_day_cents == 1000
