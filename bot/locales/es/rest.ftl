## /agents, topes de gasto en /usage y avisos de presupuesto, valores de /subagents info y tools.

agents-title = agentes:
agents-unbound = sin vincular
agents-none = (ninguno)

# A member's daily cap is 80% used; $member is their mention, $what, $use and $frees the cap's words (cap-*).
budget-warning = { $member } ⚠️ Has usado el { $share } % de { $what }: { $use } ({ $key }). { $frees }.

## /subagents info and list: a run's recorded values, worded.

# $status: a run's stored status.
outcome-status = { $status ->
    [queued] en cola
    [running] en curso
    [waiting_children] esperando a sus hijos
    [awaiting_approval] esperando aprobación
    [completed] completada
    [failed] fallida
    [timed_out] agotó el tiempo
    [killed] detenida
   *[interrupted] interrumpida
  }
# $kind: what started a child an agent's tool runs for itself, or a schedule's firing.
session-kind = { $kind ->
    [subagent] sub-agente
    [delegate] delegado
   *[scheduled] programado
  }
delegation = { $how ->
    [subagent] sub-agente
    [bounded] acotado
   *[independent] independiente
  }
session-role = { $role ->
    [main] principal
    [orchestrator] orquestador
   *[leaf] hoja
  }
cleanup = { $how ->
    [keep] conservar
   *[delete] borrar
  }

## /subagents tools: the places an agent runs, and why a tool is not offered there.

tools-server-count = { $count } { $count ->
    [one] herramienta
   *[other] herramientas
  }
tools-place-main = Como agente principal de una conversación
# $role: a session-role.
tools-place-subagent = Como sub-agente a profundidad { $depth } ({ $role })
tools-why-leaf = un sub-agente hoja no recibe herramientas de sesión
tools-why-main-only = solo el agente principal
tools-why-subagents = retiradas a los sub-agentes por [tools.subagents.tools]
tools-why-risk = { $how ->
    [excluded] excluidas por
   *[not-allowed] no están en allowed_tools de
  } el perfil de riesgo '{ $profile }'
tools-why-delegate = necesita un risk_profile y otro agente en quien delegar
