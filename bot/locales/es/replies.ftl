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
kill-all-none-yours = Ninguno de los sub-agentes activos es tuyo para detenerlo.
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
