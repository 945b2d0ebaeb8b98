"""threadbound: a Discord bot with thread-bound LLM sub-agent sessions."""
