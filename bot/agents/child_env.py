"""The environment of a tool source's process: an MCP server's, an ACP agent's.

It gets only ``HOME``, ``PATH``, ``SHELL`` and ``TERM`` of the bot's environment (and the like), plus what its
``env_from`` names: the bot's token and API keys never reach it unless the config hands one over by name.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp.client.stdio import get_default_environment


def child_environment(env_from: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The trimmed default environment plus each ``env_from`` variable, read from the bot's ``environ``."""
    return get_default_environment() | {name: environ.get(source, "") for name, source in env_from.items()}
