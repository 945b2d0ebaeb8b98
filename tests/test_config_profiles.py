"""ZeroClaw-style profiles in config.toml: risk and runtime profiles, [delegate], and each agent's delegates —
their defaults, and every validation error of reference/zeroclaw.md §3 as one line naming the key."""

import pytest

from bot.config import ConfigError, parse_config
from bot.profiles import DelegateEntry

AGENTS = """
[agents.list.main]
[agents.list.coder]
[agents.list.writer]
"""


def error_for(text: str) -> str:
    with pytest.raises(ConfigError) as error:
        parse_config(text)
    return str(error.value)


def test_defaults_follow_zeroclaw():
    config = parse_config("[risk_profiles.plain]\n[runtime_profiles.plain]\n" + AGENTS)
    risk, runtime = config.risk_profiles["plain"], config.runtime_profiles["plain"]
    assert (risk.level, risk.allowed_tools, risk.excluded_tools, risk.always_ask) == ("supervised", [], [], [])
    assert risk.delegation_policy.mode == "forbidden"
    assert (runtime.agentic, runtime.parallel_tools, runtime.max_actions_per_hour) == (False, None, 20)
    assert (runtime.max_tool_iterations, runtime.tool_iterations) == (0, 10)
    assert (runtime.max_delegation_depth, runtime.delegation_depth) == (0, 3)
    assert (runtime.delegation_timeout_secs, runtime.agentic_timeout_secs) == (None, None)
    assert (config.delegate.timeout_secs, config.delegate.agentic_timeout_secs) == (120, 300)
    main = config.agents.list["main"]
    assert (main.enabled, main.risk_profile, main.runtime_profile, main.delegates) == (True, None, None, [])
    assert main.delegate_same_risk_profile is True


def test_an_empty_allowed_list_is_no_constraint_and_excluded_wins():
    config = parse_config(
        '[risk_profiles.open]\n[risk_profiles.narrow]\nallowed_tools = ["delegate", "web"]\nexcluded_tools = ["web"]\n'
    )
    assert config.risk_profiles["open"].allows("anything")
    narrow = config.risk_profiles["narrow"]
    assert (narrow.allows("delegate"), narrow.allows("web"), narrow.allows("other")) == (True, False, False)


def test_a_string_delegate_is_bounded_and_an_object_names_its_mode():
    config = parse_config(
        AGENTS.replace(
            "[agents.list.main]\n",
            '[agents.list.main]\ndelegates = ["coder", { agent = "writer", mode = "independent" }]\n',
        )
    )
    assert config.agents.list["main"].delegates == [
        DelegateEntry(agent="coder", mode="bounded"),
        DelegateEntry(agent="writer", mode="independent"),
    ]


@pytest.mark.parametrize(
    ("delegates", "message"),
    [
        ('[""]', "agents.list.main.delegates[0].agent is empty; remove it or name a configured agent"),
        (
            '["coder", "main"]',
            'agents.list.main.delegates[1].agent = "main" names this agent itself; an agent cannot delegate to itself',
        ),
        ('["ghost"]', 'agents.list.main.delegates[0].agent = "ghost" but agents.list.ghost is not configured'),
        (
            '["coder", { agent = "coder", mode = "independent" }]',
            'agents.list.main.delegates[1].agent = "coder" duplicates an earlier delegate target',
        ),
    ],
)
def test_each_bad_delegate_entry_stops_start_up_naming_the_key(delegates, message):
    text = AGENTS.replace("[agents.list.main]\n", f"[agents.list.main]\ndelegates = {delegates}\n")
    assert error_for(text) == f"config: {message}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[agents.list.main]\nrisk_profile = "strict"\n',
            "agents.list.main.risk_profile = 'strict' is not defined; add [risk_profiles.strict] (defined: none)",
        ),
        (
            '[runtime_profiles.fast]\n[agents.list.main]\nruntime_profile = "slow"\n',
            "agents.list.main.runtime_profile = 'slow' is not defined; add [runtime_profiles.slow] (defined: fast)",
        ),
        ("[agents.list.main]\nenabled = false\n", "agents.list.main.enabled = false, but it is the default_agent"),
    ],
)
def test_unknown_profiles_and_a_disabled_default_agent_are_named(text, message):
    assert error_for(text) == f"config: {message}"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[risk_profiles.x]\nlevel = "root"\n', "'risk_profiles.x.level'"),
        ('[risk_profiles.x]\ndelegation_policy = { mode = "maybe" }\n', "'risk_profiles.x.delegation_policy.mode'"),
        ("[risk_profiles.x]\nshell = true\n", "unknown key 'risk_profiles.x.shell'"),
        ("[runtime_profiles.x]\nmax_actions_per_hour = -1\n", "'runtime_profiles.x.max_actions_per_hour'"),
        ("[runtime_profiles.x]\ndelegation_timeout_secs = 0\n", "'runtime_profiles.x.delegation_timeout_secs'"),
        ("[delegate]\ntimeout_secs = 0\n", "'delegate.timeout_secs'"),
        (
            '[agents.list.main]\ndelegates = [{ agent = "main", mode = "free" }]\n',
            "'agents.list.main.delegates.0.mode'",
        ),
    ],
)
def test_out_of_range_profile_values_name_their_key(text, key):
    assert key in error_for(text)
