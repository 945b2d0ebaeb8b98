"""Who may delegate to whom (ZeroClaw's reachable set, roster and refusals, reference/zeroclaw.md §2), table-driven
over one config."""

from __future__ import annotations

import pytest

from bot.config import parse_config
from bot.core.tools.delegate_reach import always_ask_refusal, reach_refusal, reachable_targets, roster

CONFIG = parse_config(
    """
[risk_profiles.team]
delegation_policy = { mode = "allow" }
[risk_profiles.other]
delegation_policy = { mode = "allow" }
always_ask = [" shell ", ""]
[risk_profiles.closed]
[agents.list.main]
risk_profile = "team"
delegates = ["outsider", { agent = "asker", mode = "independent" }, { agent = "peer", mode = "independent" }]
[agents.list.peer]
risk_profile = "team"
[agents.list.dormant]
risk_profile = "team"
enabled = false
[agents.list.outsider]
risk_profile = "other"
[agents.list.asker]
risk_profile = "other"
[agents.list.loner]
risk_profile = "team"
delegate_same_risk_profile = false
delegates = ["outsider"]
[agents.list.bare]
[agents.list.shut]
risk_profile = "closed"
"""
)


def test_the_reachable_set_is_same_profile_peers_then_explicit_entries_which_override():
    assert reachable_targets(CONFIG, "main") == {
        "asker": "independent",
        "loner": "bounded",
        "outsider": "bounded",
        "peer": "independent",  # listed explicitly: overrides the implicit bounded reach
    }
    assert reachable_targets(CONFIG, "loner") == {"outsider": "bounded"}  # opt-out hides peers, keeps explicit
    assert reachable_targets(CONFIG, "bare") == {}  # no profile: no implicit peers


def test_the_roster_is_empty_when_the_policy_forbids_delegating():
    assert roster(CONFIG, "main") == ["asker", "loner", "outsider", "peer"]
    assert roster(CONFIG, "shut") == []
    assert roster(CONFIG, "bare") == []


@pytest.mark.parametrize(
    ("caller", "target", "refusal"),
    [
        ("main", "peer", None),
        ("main", "outsider", None),
        (
            "shut",
            "main",
            'delegation is forbidden for caller "shut" by risk profile "closed" delegation_policy; set '
            '[risk_profiles.closed].delegation_policy mode = "allow"',
        ),
        (
            "bare",
            "main",
            'delegation is forbidden for caller "bare" by risk profile "" delegation_policy; set the caller risk '
            'profile\'s delegation_policy mode = "allow"',
        ),
        (
            "main",
            "ghost",
            'delegate target "ghost" is not reachable from "main": no agent with that alias exists in the loaded '
            "config",
        ),
        ("main", "dormant", 'delegate target "dormant" is not reachable from "main": the target agent is disabled'),
        (
            "loner",
            "peer",
            'delegate target "peer" is not reachable from "loner": delegate_same_risk_profile is disabled and the '
            "target is not listed in [agents.loner].delegates",
        ),
        (
            "outsider",
            "main",
            'delegate target "main" is not reachable from "outsider": different risk profile (caller uses "other", '
            'target uses "team"). delegate_same_risk_profile only reaches agents with the same risk profile; add an '
            "explicit [agents.outsider].delegates entry with the intended mode, or change one agent's risk_profile.",
        ),
    ],
)
def test_each_reach_refusal_names_its_cause(caller, target, refusal):
    assert reach_refusal(CONFIG, caller, target) == refusal


def test_only_an_independent_target_with_always_ask_entries_is_refused():
    assert always_ask_refusal(CONFIG, "main", "asker", "independent") == (
        'delegate target "asker" cannot run in independent mode from "main": risk profile "other" has always_ask '
        'entries (shell). See ZeroClaw docs, "Delegation & SubAgents" > "What\'s not supported".'
    )
    assert always_ask_refusal(CONFIG, "main", "outsider", "bounded") is None
    assert always_ask_refusal(CONFIG, "main", "peer", "independent") is None
