"""Which runtime a spawned sub-agent runs on: the bot's own agent runtime, or an ACP agent (a harness session).

With ``runtime="acp"`` the ``agentId`` names an ``[acp_agents.<name>]``; the child session is the requester's
agent's as far as budgets and caps go, and its turns go to that ACP agent.
"""

from __future__ import annotations

from bot.config import Config
from bot.core.errors import SpawnRefused
from bot.i18n import Words
from bot.text import quoted

BOT_RUNTIMES = ("subagent", "agent")  # the contract's name, and this bot's


def acp_target(runtime: str, agent_id: str | None, config: Config, *, sandboxed: bool) -> str | None:
    """The ACP agent a spawn names (``None``: it runs on the bot's runtime); a :class:`SpawnRefused` if wrong.

    ``sandboxed``: the requester is, and an ACP agent runs outside any sandbox of the bot's."""
    if runtime in BOT_RUNTIMES:
        return None
    if runtime != "acp":
        raise SpawnRefused("error", f'Invalid runtime "{quoted(runtime)}". Use "subagent" or "acp".')
    if sandboxed:
        raise SpawnRefused("forbidden", 'Sandboxed sessions cannot spawn ACP harness sessions (runtime="acp").')
    configured = ", ".join(sorted(config.acp_agents)) or "none ([acp_agents.<name>] in the config)"
    if agent_id is None:
        raise SpawnRefused("error", f'runtime="acp" requires agentId naming an ACP agent (configured: {configured}).')
    if agent_id not in config.acp_agents:
        raise SpawnRefused(
            "error", Words("refused-unknown-acp-agent", {"agent": quoted(agent_id), "configured": configured})
        )
    return agent_id
