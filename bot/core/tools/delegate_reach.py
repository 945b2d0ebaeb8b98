"""Who may ``delegate`` to whom: each caller's reachable agents and its policy per target.

An agent reaches every other enabled agent with the same risk profile as a bounded delegate (unless its
``delegate_same_risk_profile`` is off), and each agent its ``delegates`` list names, in the mode listed (an explicit
entry overrides the implicit one). The caller's risk profile must allow delegation at all, and an independent delegate
whose profile asks for approvals is refused: nobody could give them. Refusals keep the ``delegate`` tool's contract
words (:mod:`bot.profiles`).
"""

from __future__ import annotations

from typing import Literal

from bot.config import Config
from bot.profiles import RiskProfile

Mode = Literal["bounded", "independent"]


def _profile_name(config: Config, agent_id: str) -> str:
    return (config.agents.list[agent_id].risk_profile or "").strip()


def reachable_targets(config: Config, caller: str) -> dict[str, Mode]:
    """Every agent ``caller`` may delegate to, sorted, with its mode."""
    agents = config.agents.list
    me = agents[caller]
    reach: dict[str, Mode] = {}
    profile = _profile_name(config, caller)
    if me.delegate_same_risk_profile and profile:
        for agent_id, agent in agents.items():
            if agent_id != caller and agent.enabled and _profile_name(config, agent_id) == profile:
                reach[agent_id] = "bounded"
    for entry in me.delegates:
        target = entry.agent.strip()
        if target != caller and target in agents and agents[target].enabled:
            reach[target] = entry.mode
    return dict(sorted(reach.items()))


def roster(config: Config, caller: str) -> list[str]:
    """The targets the ``delegate`` tool advertises to ``caller`` (none when its policy forbids delegating)."""
    risk = config.risk_profile_of(caller)
    if risk is None or risk.delegation_policy.mode != "allow":
        return []
    return list(reachable_targets(config, caller))


def reach_refusal(config: Config, caller: str, target: str) -> str | None:
    """Why ``caller`` may not delegate to ``target`` (policy first, then reachability), or ``None``."""
    risk = config.risk_profile_of(caller)
    if risk is None or risk.delegation_policy.mode != "allow":
        profile = _profile_name(config, caller)
        fix = (
            f'set [risk_profiles.{profile}].delegation_policy mode = "allow"'
            if profile
            else 'set the caller risk profile\'s delegation_policy mode = "allow"'
        )
        return f'delegation is forbidden for caller "{caller}" by risk profile "{profile}" delegation_policy; {fix}'
    if target.strip() in reachable_targets(config, caller):
        return None
    return _unreachable(config, caller, target.strip())


def _unreachable(config: Config, caller: str, target: str) -> str:
    agents = config.agents.list
    prefix = f'delegate target "{target}" is not reachable from "{caller}"'
    if target not in agents:
        return f"{prefix}: no agent with that alias exists in the loaded config"
    if not agents[target].enabled:
        return f"{prefix}: the target agent is disabled"
    if not agents[caller].delegate_same_risk_profile:
        return (
            f"{prefix}: delegate_same_risk_profile is disabled and the target is not listed in "
            f"[agents.{caller}].delegates"
        )
    # Same-profile reach is on, so the profiles differ (the contract's catch-all wording is unreachable here).
    return (
        f'{prefix}: different risk profile (caller uses "{_profile_name(config, caller)}", target uses '
        f'"{_profile_name(config, target)}"). delegate_same_risk_profile only reaches agents with the same risk '
        f"profile; add an explicit [agents.{caller}].delegates entry with the intended mode, or change one agent's "
        "risk_profile."
    )


def always_ask_refusal(config: Config, caller: str, target: str, mode: Mode) -> str | None:
    """An independent delegate runs without its caller's approvals; a target whose profile asks for some is
    refused before anything starts."""
    risk: RiskProfile | None = config.risk_profile_of(target)
    asks = [tool.strip() for tool in (risk.always_ask if risk else []) if tool.strip()]
    if mode != "independent" or not asks:
        return None
    return (
        f'delegate target "{target}" cannot run in independent mode from "{caller}": risk profile '
        f'"{_profile_name(config, target)}" has always_ask entries ({", ".join(asks)}). See ZeroClaw docs, '
        '"Delegation & SubAgents" > "What\'s not supported".'
    )
