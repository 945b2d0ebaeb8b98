"""``/subagents tools``: what an agent may call in each place it can run, and why not the rest, in a few lines.

The frame is in the asking member's language; the places and reasons are the core's words, tool names as they are."""

from __future__ import annotations

from bot.core.people.tool_report import ToolReport
from bot.i18n import localized


def render_tool_report(report: ToolReport, locale: object = None) -> str:
    none = localized("tools-none", locale)
    profiles = localized(
        "tools-profiles", locale, risk=report.risk_profile or none, runtime=report.runtime_profile or none
    )
    lines = [localized("tools-title", locale, agent=report.agent_id, profiles=profiles)]
    if report.servers:
        servers = "; ".join(f"{name} — {state}" for name, state in report.servers.items())
        lines.append(localized("tools-servers", locale, servers=servers))
    for placement in report.placements:
        offered = ", ".join(placement.offered) or localized("tools-no-tools", locale)
        lines.append(f"**{placement.where.capitalize()}:** {offered}")
        if placement.withheld:
            why = "; ".join(f"{reason}: {', '.join(tools)}" for reason, tools in placement.withheld.items())
            lines.append(f"-# {localized('tools-withheld', locale, why=why)}")
    return "\n".join(lines)
