## /agents, budget caps in /usage and budget warnings, /subagents info and tools values.

agents-title = agents:
agents-unbound = unbound
agents-none = (none)
