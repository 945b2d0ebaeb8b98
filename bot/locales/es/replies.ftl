## Respuestas a comandos y botones, y rechazos, para quien lo pidió.

refused-session-archived = La sesión { $session } se archivó hace { $ago } y no admite más mensajes. Inicia un nuevo sub-agente para seguir (su transcripción sigue legible con /subagents log).
refused-ephemeral-session = La sesión { $session } es una ejecución de spawn_subagent: solo responde al agente que la inició y no admite mensajes.
refused-caller-ended = La ejecución { $run } ha terminado; ya no puede iniciar nada más.

# Un comando que falló antes o fuera de los rechazos propios del bot.
refused-bot-missing-permissions = ⚠️ Me faltan los permisos que necesito aquí: { $missing }.
refused-missing-permissions = ⚠️ Necesitas estos permisos para hacerlo: { $missing }.
refused-server-only = ⚠️ Este comando solo funciona en un servidor.
refused-cooldown = ⚠️ Más despacio: vuelve a intentarlo en { $seconds } s.
refused-check-failed = ⚠️ No puedes usar este comando aquí.
command-failed = ⚠️ Algo salió mal al ejecutar { $command ->
    [none] este comando
   *[other] /{ $command }
}. Ha quedado registrado.

# Sub-agentes sobre los que se actúa: /subagents kill, steer, send y /stop, y los botones Kill y Steer.
run-already-finished = { $label } ya ha terminado.
killed-run = detenido { $label }{ $descendants ->
    [0] .
    [one] {" "}(+ { $descendants } descendiente).
   *[other] {" "}(+ { $descendants } descendientes).
}
killed-all = { $stopped ->
    [one] detenido { $stopped } sub-agente
   *[other] detenidos { $stopped } sub-agentes
}.{ $others ->
    [0] {""}
    [one] {" "}{ $others } es de otra persona.
   *[other] {" "}{ $others } son de otras personas.
}
kill-all-none = No hay sub-agentes activos que detener.
kill-all-none-yours = Ninguno de los sub-agentes activos es tuyo, así que no puedes detener ninguno.
steered-run = redirigido { $label } (ejecución { $run }).
send-still-running = ⏳ El sub-agente sigue en marcha (ejecución { $run }).
send-no-output = (sin salida)
send-failed = ⚠️ Error del sub-agente: { $error } (ejecución { $run }).
stopped = ⚙️ Se abortó el agente.{ $stopped ->
    [0] {""}
    [one] {" "}Se detuvo { $stopped } sub-agente.
   *[other] {" "}Se detuvieron { $stopped } sub-agentes.
}
stop-nothing-yours = No tienes nada en marcha en esta conversación.
stop-nothing = No hay nada en marcha en esta conversación.
refused-steer-waiting = { $label } está esperando a sus hijos; redirige a uno de ellos.
refused-steer-rate = Demasiadas redirecciones seguidas. Espera un momento antes de enviar otra.
refused-steer-empty = Para redirigir hace falta un mensaje.
refused-send-empty = Para enviar hace falta un mensaje.
refused-not-yours = Solo puedes { $action ->
    [kill] detener
    [steer] redirigir
    [send] escribir a
    [focus] vincular
   *[other] { $action }
} ejecuciones que iniciaste tú; { $label } es de { $owner }. Pídeselo a esa persona o a un moderador.

# Un objetivo que no nombra a ningún sub-agente, o a más de uno.
refused-missing-target = Falta el id del sub-agente.
refused-unknown-target = Id de sub-agente desconocido: { $target }
refused-invalid-index = Número de sub-agente no válido: { $target }
refused-unknown-session = Sesión de sub-agente desconocida: { $target }
refused-ambiguous-label = Etiqueta de sub-agente ambigua: { $target }
refused-ambiguous-label-prefix = Prefijo de etiqueta de sub-agente ambiguo: { $target }
refused-ambiguous-run-prefix = Prefijo de id de ejecución ambiguo: { $target }

# Texto que envía la gente: tareas, mensajes, redirecciones, nombres e instrucciones de horarios.
refused-text-empty = { $what ->
    [Task] La tarea no puede estar vacía.
    [Name] El nombre no puede estar vacío.
    [Prompt] La instrucción no puede estar vacía.
   *[other] El mensaje no puede estar vacío.
}
refused-text-too-long-terse = { $what ->
    [Task] Tarea demasiado larga
    [Name] Nombre demasiado largo
    [Prompt] Instrucción demasiado larga
   *[other] Mensaje demasiado largo
} ({ $length } caracteres, máx. { $limit }).
refused-text-too-long = { $what ->
    [Task] La tarea es demasiado larga
    [Name] El nombre es demasiado largo
    [Prompt] La instrucción es demasiado larga
   *[other] El mensaje es demasiado largo
} ({ $length } caracteres; el límite es { $limit }).

# Respuestas a comandos.
spawned = Sub-agente { $agent } iniciado (sesión { $session }, ejecución { $run }).
memory-forgotten = Olvidado el recuerdo #{ $id } ({ $agent }: { $key }).
schedule-removed = Horario **{ $name }** eliminado (id { $id }).
mention-needs-text = Mencióname con un mensaje, p. ej. `@me resume el plan`.

# Rechazos de los propios comandos.
refused-settings-admin-only = Necesitas el permiso Gestionar servidor para ver o cambiar estos ajustes.
refused-set-and-inherit = Fija { $key } o haz que herede, no ambas cosas.
refused-cost-too-small = { $key } debe ser 0 (sin tope) o al menos $0.000001; { $value } se redondearía a sin tope.
refused-schedules-admin-only = Necesitas el permiso Gestionar servidor para gestionar horarios.
refused-schedule-channel = Los horarios publican en un canal de texto o un hilo; elige uno con la opción channel.
refused-schedule-cannot-post = No puedo publicar en { $channel }: me falta allí el permiso { $missing }.
refused-usage-of-another = Solo los moderadores pueden ver el uso de otro miembro; /usage sin miembro muestra el tuyo.

# El formulario del botón Steer, para quien lo pulsó.
steer-modal-title = Redirigir este sub-agente
steer-modal-direction = Nueva dirección

# Aprobar y Denegar, para quien pulsó.
approval-decided = { $verb ->
    [approve] Aprobado
   *[deny] Denegado
} `{ $tool }` para la ejecución { $run }.
refused-approval-unknown = Esa solicitud de aprobación no existe.
refused-approval-elsewhere = Esa solicitud de aprobación solo se puede decidir en el canal donde se publicó.
refused-approval-settled = Esa llamada de la ejecución { $run } ya { $status ->
    [approved] está aprobada
    [denied] está denegada
    [timed_out] caducó
   *[cancelled] está cancelada
}.
refused-approval-run-finished = La ejecución { $run } ya ha terminado.
refused-approval-not-yours = Solo puedes { $verb ->
    [approve] aprobar
   *[deny] denegar
} llamadas a herramientas de ejecuciones que iniciaste tú; la ejecución { $run } es de { $owner }. Pídeselo a esa persona o a un moderador.
refused-approval-decided = Esa llamada de la ejecución { $run } ya se decidió.

# Un inicio de sub-agente rechazado, por el comando de un miembro o por el sessions_spawn de un agente.
refused-bindings-disabled = Los hilos vinculados de Discord están desactivados (pon channels.discord.thread_bindings.enabled = true para activarlos en Discord, o session.thread_bindings.enabled = true para todo).
refused-binding-spawns-disabled = Iniciar sub-agentes en hilos vinculados de Discord está desactivado (pon channels.discord.thread_bindings.spawn_subagent_sessions = true para activarlo).
refused-member-running = { $whose ->
    [you] Ya tienes
    [turn] El miembro de este turno ya tiene
   *[other] { $whose } ya tiene
} { $active } sub-agentes en marcha { $where ->
    [server] en este servidor
   *[dm] en mensajes directos
}; espera a que termine uno o detén uno.
refused-queue-full = La cola de sub-agentes está llena ({ $waiting } ejecuciones esperando, agents.defaults.subagents.max_queued = { $cap }); vuelve a intentarlo cuando hayan empezado algunas.
refused-server-queue-full = La cola de sub-agentes está llena { $where ->
    [server] en este servidor
   *[dm] en mensajes directos
} ({ $waiting } ejecuciones esperando, agents.defaults.subagents.max_queued_per_server = { $cap }); vuelve a intentarlo cuando hayan empezado algunas.
refused-unknown-acp-agent = Agente ACP desconocido "{ $agent }". Agentes ACP configurados: { $configured }.
refused-invalid-agent-id = agentId no válido "{ $agent }". Los ids de agente deben cumplir { $pattern }. Usa agents_list para ver los válidos.
refused-spawn-depth = sessions_spawn no está permitido a esta profundidad (profundidad actual: { $depth }, máxima: { $max })
refused-unknown-agent-id = agentId desconocido "{ $agent }". Agentes configurados: { $configured }.
refused-agent-disabled = El agente "{ $agent }" está desactivado (agents.list.{ $agent }.enabled = false).
refused-no-thinking = El modelo { $model } no admite niveles de razonamiento. Si los admite, pon supports_thinking = true en [providers.{ $provider }].
refused-spawn-thread-unavailable = No se pudo crear ni vincular un hilo de Discord para esta sesión de sub-agente: { $reason }

# /focus, /unfocus y /session idle|max-age.
focused-here = ✅ esta conversación queda vinculada a { $session }.
focused-new-thread = ✅ creado el hilo { $thread } y vinculado a { $session }.
unfocused = ✅ Conversación desvinculada.
not-focused = ℹ️ Esta conversación no está vinculada ahora.
lifetime-off = ℹ️ { $which ->
    [idle] La espera por inactividad
   *[other] La edad máxima
} está desactivada para esta sesión vinculada.
lifetime-shown = ℹ️ { $which ->
    [idle] Tiempo de inactividad activo ({ $duration }; próxima desvinculación automática
   *[other] Edad máxima activa ({ $duration }; desvinculación automática forzosa
} el { $at }).
lifetime-disabled = ✅ { $which ->
    [idle] Tiempo de inactividad desactivado
   *[other] Edad máxima desactivada
} para esta vinculación.
lifetime-set = ✅ { $which ->
    [idle] Tiempo de inactividad fijado en { $duration } (próxima desvinculación automática
   *[other] Edad máxima fijada en { $duration } (desvinculación automática forzosa
} el { $at }).
refused-duration = Duración no válida '{ $value }'.{ $longest ->
    [none] {""}
   *[other] {" "}La más larga es { $longest }.
} Uso: /session { $which } <duración|off> (ejemplo: /session { $which } 24h, 90m u off).
refused-binding-not-yours = Solo { $who } puede { $what ->
    [refocus] volver a vincular
    [unfocus] desvincular
    [update] cambiar la vida de la sesión de
   *[other] { $what }
} esta conversación.
refused-no-threads = Los hilos vinculados no están disponibles: ningún adaptador de chat puede crear hilos.
refused-bindings-off = Los hilos vinculados están desactivados.
refused-thread-unavailable = No se puede crear un hilo aquí: { $reason }

# /memory forget, /schedule add|remove, /subagents tools y send.
refused-no-memory = No hay ningún recuerdo #{ $id } en este servidor. /memory list muestra sus números.
refused-memory-not-yours = El recuerdo #{ $id } no se guardó de tus conversaciones; solo un administrador (Gestionar servidor) puede olvidarlo.
refused-memory-forgotten = El recuerdo #{ $id } ya se olvidó.
refused-schedule-exists = Ya hay un horario llamado "{ $name }" en este servidor; elige otro nombre.
refused-schedule-in-config = El horario "{ $name }" está definido en config.toml; quítalo allí.
refused-no-schedule = No hay ningún horario llamado "{ $name }" en este servidor.
refused-cron = "{ $cron }" no es una expresión cron válida: { $error }.
refused-unknown-agent = Agente desconocido "{ $agent }". Agentes configurados: { $configured }.
refused-no-earlier-run = La sesión { $session } no tiene una ejecución anterior a la que dar continuidad.

# Adjuntos que una ejecución no puede aceptar; no se envía nada al modelo.
refused-blind-model = El modelo { $model } no puede leer imágenes ({ $images }): no está en vision_models de [providers.{ $provider }]. Envía el texto sin las imágenes, o elige un modelo que lea imágenes.
refused-image-while-running = El sub-agente sigue trabajando, y un turno en curso solo lee texto, así que la imagen ({ $images }) no se envió. Vuelve a enviarla cuando termine su ejecución.
refused-too-many-files = Adjuntaste { $count } archivos; un mensaje puede adjuntar como mucho { $limit } ([discord] max_attachments). No se envió nada al modelo.
refused-file-too-big = `{ $file }` ocupa { $size }; un archivo puede ocupar como mucho { $limit } ([discord] max_attachment_bytes). No se envió nada al modelo.
refused-files-too-big = Tus archivos suman { $size }; los archivos de un mensaje pueden sumar como mucho { $limit } ([discord] max_attachments_total_bytes). No se envió nada al modelo.
refused-download-failed = No se pudo descargar `{ $file }` de Discord ({ $status }); inténtalo de nuevo.
refused-file-over = `{ $file }` supera { $limit }; no se envió nada al modelo.
refused-unreadable-file = `{ $file }` no es ni texto ni una imagen (PNG, JPEG, GIF o WebP), así que el modelo no puede leerlo. No se envió nada al modelo.

# Un mensaje en un hilo vinculado, antes de lo que permite el límite de redirecciones.
refused-slow-down = Más despacio: a un sub-agente en curso le llega un mensaje cada { $interval } s. Este no se entregó; vuelve a enviarlo en { $wait } s.

# /settings: el valor de cada ajuste y de dónde viene.
settings-updated = Actualizado.
settings-thread-bindings = Ajustes de hilos vinculados aquí:
settings-budgets = Topes de gasto aquí (0 = sin tope):
setting-none = ninguno
setting-no-cap = sin tope
setting-source = { $source ->
    [this-server] este servidor
    [default] por defecto
   *[not-set] sin fijar
}

# Topes de gasto: de quién y de qué es el uso que cuenta un tope, cuánto se ha usado y cuándo se libera.
refused-over-budget = Presupuesto agotado: { $what }: { $use } ({ $key }). { $frees }.
cap-what = { $key ->
    [member_runs_per_hour] tus ejecuciones de la última hora en este servidor
    [server_runs_per_hour] las ejecuciones de este servidor en la última hora
    [member_concurrent_runs] tus ejecuciones en curso en este servidor
    [member_tokens_per_day] tus tokens de hoy en este servidor
    [member_cost_per_day_usd] tu gasto de hoy en este servidor
    [server_tokens_per_day] los tokens de hoy de este servidor
   *[server_cost_per_day_usd] el gasto de hoy de este servidor
}
cap-agent-today = { $setting ->
    [tokens_per_day] los tokens
   *[cost_per_day_usd] el gasto
} de hoy del agente { $agent }
cap-amount = { $count } { $unit ->
    [token] token
    [tokens] tokens
    [run] ejecución
   *[runs] ejecuciones
}
cap-use = { $used } de { $limit }
cap-resets = Se reinicia a las { $at }, dentro de { $in }
cap-frees-at = Se libera una a las { $at }, dentro de { $in }
cap-frees-when-one-ends = Se libera una cuando termine alguna

# Un mensaje en un hilo vinculado al sub-agente de otra persona: se le dice en privado, una vez, en el idioma del servidor.
thread-nobodys = 🔒 { $thread } está vinculado a una sesión de sub-agente que no es de nadie; allí solo un moderador puede hablar con ella. Inicia la tuya con `/subagents spawn`.
thread-someone-elses = 🔒 { $thread } está vinculado a la sesión de sub-agente de { $owner }; allí solo esa persona o un moderador pueden hablar con ella. Inicia la tuya con `/subagents spawn`.
