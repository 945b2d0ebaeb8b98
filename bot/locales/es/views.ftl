## Lo que el bot muestra a un miembro que lo pidió: /subagents list, info, log; /usage; /schedule; /memory; herramientas.

run-status-unknown = desconocido
run-kind-task = , tarea { $task }
runs-none = (ninguno)
runs-active = sub-agentes activos:
runs-recent = sub-agentes recientes (últimos 30 min):
when-in = en { $span }
when-ago = hace { $span }
internal-context = (contexto interno)

usage-no-requests = ninguna solicitud al modelo
usage-cost-unknown = costo desconocido (sin precio configurado)
usage-requests = { $count } { $count ->
    [one] solicitud
   *[other] solicitudes
  }
usage-tool-calls = { $count } { $count ->
    [one] llamada a herramienta
   *[other] llamadas a herramientas
  }

info-title = ℹ️ Información del sub-agente
info-status = Estado: { $value }
info-label = Etiqueta: { $value }
info-task = Tarea: { $value }
info-run = Ejecución: { $value }
info-session = Sesión: { $value }
info-agent = Agente: { $agent } (profundidad { $depth }, { $role })
info-runtime-acp = Entorno: { $value }
info-runtime = Duración: { $value }
info-now = Ahora: { $value }
info-kind = Tipo: { $value }
info-model = Modelo: { $value }
info-model-served-by = { $model } (servido por { $fallback })
info-usage = Uso: { $value }
info-created = Creada: { $value }
info-started = Iniciada: { $value }
info-ended = Terminada: { $value }
info-cleanup = Limpieza: { $value }
info-archive = Archivo: { $value }
info-archive-due = prevista { $when }
info-archive-unscheduled = no programada
info-outcome = Resultado final: { $value }
info-result = Resultado: { $value }
info-delivery = Entrega: { $value }
info-transcript = Transcripción: { $count } { $count ->
    [one] mensaje
   *[other] mensajes
  }

log-title = 📜 Registro del sub-agente: { $label }
log-empty = (sin mensajes)
log-role-user = Usuario
log-role-assistant = Asistente
log-role-tool-call = Llamada a herramienta
log-role-tool-result = Resultado de herramienta
log-role-file = 📎 Archivo adjunto
log-truncated = [recortado: { $characters } caracteres, se muestran los primeros { $shown }]

## /usage: los totales de un miembro, por agente, y el gráfico.

usage-title = **Uso de { $member }, { $period }** ({ $span }, UTC)
usage-span = { $first } a { $last }
usage-period-day = hoy
usage-period-week = los últimos 7 días
usage-period-month = los últimos 30 días
usage-empty = Ninguna ejecución y ninguna solicitud al modelo.
usage-runs = { $count } { $count ->
    [one] ejecución
   *[other] ejecuciones
  }
usage-cost-none-known = costo desconocido
usage-cost-partly = { $cost } + { $count } { $count ->
    [one] solicitud sin precio
   *[other] solicitudes sin precio
  }
usage-unpriced = El costo no incluye { $count } { $count ->
    [one] solicitud
   *[other] solicitudes
  } a modelos sin precio conocido (`[pricing."<provider>/<model>"]` fija uno).
usage-by-agent = Por agente:
usage-more-agents = - y { $count } { $count ->
    [one] agente más
   *[other] agentes más
  }
usage-caps = Límites ahora:
usage-caps-of = Límites ahora, tal como los lee { $member }:
usage-no-caps = No se aplica ningún límite.
usage-chart-title = Ejecuciones y costo por día del { $first } al { $last } (UTC)

chart-runs = ejecuciones
chart-cost-line = costo (solicitudes con precio)
chart-cost-axis = costo (USD)
chart-title = Ejecuciones y costo por día, { $first } a { $last } (UTC)
# La etiqueta de un día bajo su barra, como patrón de fecha CLDR.
chart-day-format = d MMM

## Una respuesta privada demasiado larga para unos pocos mensajes, adjunta como archivo.

reply-attached = *(texto completo adjunto como { $file })*
reply-attached-long = *(texto completo adjunto como { $file }, { $characters } caracteres)*

## /schedule: la línea de una programación, la lista. Nombres, expresiones cron y zonas horarias no cambian.

schedule-line = **{ $name }** (id { $id }, { $source }): `{ $cron }` { $timezone } → { $agent } en { $channel }, { $next }
schedule-added-by = añadida por { $member }
schedule-next = próxima { $when }
schedule-no-next = ninguna fecha futura coincide
schedule-added = Programada { $schedule }.
schedules-title = Programaciones de este servidor:
schedules-none = No hay programaciones en este servidor. Añade una con /schedule add.

## /memory list: lo que se recuerda, tal como se escribió.

memory-from-member = de la conversación de { $member }, { $when }
memory-from-schedule = de la conversación de una programación, { $when }
memories-yours = Recordado de tus conversaciones en este servidor ({ $total }):
memories-everyone = Recordado de las conversaciones de este servidor ({ $total }):
memories-none-yours = No se recuerda nada de tus conversaciones en este servidor.
memories-none-everyone = No se recuerda nada de las conversaciones de este servidor.
memories-older = …y { $count } { $count ->
    [one] más antiguo
   *[other] más antiguos
  }; olvida algunos para verlos.
memories-forget-hint = Olvida uno con /memory forget id:<number>.

## /subagents tools: el marco alrededor de los lugares y motivos del núcleo. Los nombres de herramientas y perfiles no cambian.

tools-title = 🧰 Herramientas de **{ $agent }** ({ $profiles })
tools-profiles = perfil de riesgo: { $risk } · perfil de ejecución: { $runtime }
tools-none = ninguno
tools-servers = Servidores MCP: { $servers }
tools-no-tools = ninguna herramienta
tools-withheld = no ofrecidas — { $why }

## /subagents info: en qué punto está el anuncio de una ejecución. El error, tal como lo dijo Discord o el bot.

delivery-not-yet = aún no anunciada
delivery-none-killed = ninguna (las ejecuciones detenidas no anuncian nada)
delivery-none-no-reply = ninguna (la ejecución respondió NO_REPLY)
delivery-delivered = entregada
delivery-pending = pendiente (intentos: { $attempts })
delivery-retrying = pendiente (intentos: { $attempts }, último error: { $error })
delivery-failed-untold = falló tras { $attempts } { $attempts ->
    [one] intento
   *[other] intentos
  }: { $error }. No se pudo avisar a quien lo pidió (consulta el registro de errores del bot).
delivery-failed-telling-channel = falló tras { $attempts } { $attempts ->
    [one] intento
   *[other] intentos
  }: { $error }. Avisando a quien lo pidió en { $channel }…
delivery-failed-telling-dm = falló tras { $attempts } { $attempts ->
    [one] intento
   *[other] intentos
  }: { $error }. Avisando a quien lo pidió por mensaje directo…
delivery-failed-told-channel = falló tras { $attempts } { $attempts ->
    [one] intento
   *[other] intentos
  }: { $error }. Se avisó a quien lo pidió en { $channel }.
delivery-failed-told-dm = falló tras { $attempts } { $attempts ->
    [one] intento
   *[other] intentos
  }: { $error }. Se avisó a quien lo pidió por mensaje directo.
