"""``/subagents tools``: what an agent may call in each place it can run, and why not the rest, in a few lines.

All in the asking member's language but tool names, and why a server is unavailable, as it said."""

from __future__ import annotations

from bot.core.people.tool_report import ToolReport
from bot.discord_adapter.spoken import spoken
from bot.i18n import localized


def render_tool_report(report: ToolReport, locale: object = None) -> str:
    none = localized("tools-none", locale)
    profiles = localized(
        "tools-profiles", locale, risk=report.risk_profile or none, runtime=report.runtime_profile or none
    )
    lines = [localized("tools-title", locale, agent=report.agent_id, profiles=profiles)]
    if report.servers:
        servers = "; ".join(f"{name} — {spoken(state, locale)}" for name, state in report.servers.items())
        lines.append(localized("tools-servers", locale, servers=servers))
    for placement in report.placements:
        offered = ", ".join(placement.offered) or localized("tools-no-tools", locale)
        lines.append(f"**{placement.where.render(locale)}:** {offered}")
        if placement.withheld:
            why = "; ".join(f"{reason.render(locale)}: {', '.join(tools)}" for reason, tools in placement.withheld)
            lines.append(f"-# {localized('tools-withheld', locale, why=why)}")
    return "\n".join(lines)
