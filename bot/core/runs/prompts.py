"""What a sub-agent is told about its situation (appended to its agent's system prompt)."""

from __future__ import annotations

from bot.records import Delegation, Session, SessionRole


def subagent_context(session: Session, max_depth: int) -> str:
    if session.delegation in (Delegation.BOUNDED, Delegation.INDEPENDENT):
        return (
            f"[Delegate Context] You are agent {session.agent_id}, delegated one task by another agent. You do not "
            "see its conversation. Your final message is returned to that agent as your result and is not posted "
            "anywhere: make it complete and self-contained."
        )
    if session.delegation is Delegation.SUBAGENT:
        return (
            f"[SubAgent Context] You are an ephemeral SubAgent of agent {session.agent_id}, running one prompt for "
            "it. You do not see its conversation. Your final message is returned to it as the result of its "
            "spawn_subagent call and is not posted anywhere: make it complete and self-contained."
        )
    lines = [
        f"[Subagent Context] You are running as a subagent (depth {session.depth}/{max_depth}) in session "
        f"{session.key}. Results auto-announce to your requester; do not busy-poll for status.",
        "Stay focused on your task. Your final message is your result: make it complete and self-contained.",
    ]
    if session.role == SessionRole.ORCHESTRATOR:
        lines.append(
            "You may split your task with sessions_spawn. Children's results arrive as internal completion events; "
            "if your turn ends before they all finish, you are woken with their results once every child has "
            "settled. Then synthesise them into your final answer. Reply NO_REPLY to a completion that needs no "
            "update."
        )
    else:
        lines.append("You are a leaf worker and CANNOT spawn further sub-agents.")
    return "\n".join(lines)
