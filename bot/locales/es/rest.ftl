## /agents, topes de gasto en /usage y avisos de presupuesto, valores de /subagents info y tools.

agents-title = agentes:
agents-unbound = sin vincular
agents-none = (ninguno)
