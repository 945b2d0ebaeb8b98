"""Harness sessions: sub-agents run by an outside coding agent (an ACP agent) instead of the bot's runtime."""
