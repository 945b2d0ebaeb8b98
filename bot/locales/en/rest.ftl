## /agents, budget caps in /usage and budget warnings, /subagents info and tools values.

agents-title = agents:
agents-unbound = unbound
agents-none = (none)

# A member's daily cap is 80% used; $member is their mention, $what, $use and $frees the cap's words (cap-*).
budget-warning = { $member } ⚠️ You have used { $share }% of { $what }: { $use } ({ $key }). { $frees }.
