"""``/subagents tools``: what an agent may call in each place it can run, and why not the rest, in a few lines."""

from __future__ import annotations

from bot.core.people.tool_report import ToolReport


def render_tool_report(report: ToolReport) -> str:
    profiles = f"risk profile: {report.risk_profile or 'none'} · runtime profile: {report.runtime_profile or 'none'}"
    lines = [f"🧰 Tools of **{report.agent_id}** ({profiles})"]
    if report.servers:
        lines.append("MCP servers: " + "; ".join(f"{name} — {state}" for name, state in report.servers.items()))
    for placement in report.placements:
        lines.append(f"**{placement.where.capitalize()}:** {', '.join(placement.offered) or 'no tools'}")
        if placement.withheld:
            why = "; ".join(f"{reason}: {', '.join(tools)}" for reason, tools in placement.withheld.items())
            lines.append(f"-# not offered — {why}")
    return "\n".join(lines)
