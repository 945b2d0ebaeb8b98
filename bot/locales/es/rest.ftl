## /agents, topes de gasto en /usage y avisos de presupuesto, valores de /subagents info y tools.

agents-title = agentes:
agents-unbound = sin vincular
agents-none = (ninguno)

# A member's daily cap is 80% used; $member is their mention, $what, $use and $frees the cap's words (cap-*).
budget-warning = { $member } ⚠️ Has usado el { $share } % de { $what }: { $use } ({ $key }). { $frees }.
