## Lo que el bot publica por su cuenta: anuncios, tableros de estado, solicitudes de aprobación, avisos.
## Las palabras de una ejecución, compartidas por publicaciones y vistas.

run-status-queued = en cola
run-status-running = en curso
run-status-waiting = esperando
run-status-awaiting-approval = esperando aprobación
run-status-done = terminada
run-status-completed = completada
run-status-failed = fallida
run-status-timed-out = agotó el tiempo
run-status-killed = detenida
run-status-interrupted = interrumpida
run-waiting-on = esperando a { $count } { $count ->
    [one] hijo
   *[other] hijos
  }
# $kind: la categoría ordinal inglesa de $place; en español basta «.º».
run-queued-place = en cola, { $place }.{ $kind ->
   *[other] º
  } en la fila

outcome-completed = terminó correctamente
outcome-timed-out = agotó el tiempo
outcome-killed = detenida
outcome-interrupted = interrumpida: { $error }
outcome-interrupted-restart = interrumpida: el bot se reinició mientras esta ejecución estaba en curso
outcome-failed = falló: { $error }
outcome-failed-unknown = falló: error desconocido

tokens-phrase = tokens { $total } (entrada { $input } / salida { $output })
stats-runtime = duración { $runtime }
stats-cost = costo est. { $cost }
stats-served-by = servida por { $model }

## El anuncio de un sub-agente: su encabezado, notas y archivos. Los ids de ejecución y el texto del agente no cambian.

announcement-header-subagent = { $icon } Sub-agente **{ $label }** (ejecución `{ $run }`): { $status }
announcement-header-schedule = { $icon } Tarea programada **{ $label }** (ejecución `{ $run }`): { $status }
announcement-no-output = (sin salida)
announcement-result-attached = *(resultado completo adjunto como result.md, { $characters } caracteres)*
announcement-reply-attached = *(respuesta completa adjunta como result.md, { $characters } caracteres)*
announcement-more-files = 📎 más archivos ({ $number }/{ $count })

## El mensaje de estado en vivo de una ejecución.

status-board-line = { $icon } **{ $label }** · { $state } · { $runtime } · { $calls } { $calls ->
    [one] llamada a herramienta
   *[other] llamadas a herramientas
  } · tokens { $tokens }
status-board-run = ejecución { $run }

## Una solicitud de aprobación publicada en un canal, y lo que dice una vez decidida. Los nombres de herramientas no cambian.

approval-asks-inline = ✋ La ejecución { $run } quiere llamar a `{ $tool }` con:
approval-asks-file = ✋ La ejecución { $run } quiere llamar a `{ $tool }` con los argumentos del archivo adjunto `{ $file }` ({ $characters } caracteres).
approval-decide-owner = { $owner } o un moderador: aprueba o rechaza en { $minutes } minutos (sin respuesta, se rechaza).
approval-decide-moderator = Un moderador: aprueba o rechaza en { $minutes } minutos (sin respuesta, se rechaza).
approval-approved = ✅ `{ $tool }` (ejecución { $run }) aprobada por { $member }.
approval-denied = 🚫 `{ $tool }` (ejecución { $run }) rechazada por { $member }.
approval-timed-out = ⏱️ `{ $tool }` (ejecución { $run }) rechazada: nadie decidió a tiempo.
approval-run-killed = 🛑 `{ $tool }` (ejecución { $run }) no se ejecutó: la ejecución fue detenida.

## Un bloque de código largo sacado de una publicación como archivo: la nota donde estaba.

code-file-lines = { $count } { $count ->
    [one] línea
   *[other] líneas
  }

## Avisar a quien lo pidió de que lo que esperaba no se pudo publicar. Los comandos no cambian.

notice-answer-not-posted = ⚠️ La respuesta de **{ $label }** (ejecución { $run }) no se pudo publicar en { $channel }: { $reason }. Vuelve a preguntar, por favor.
notice-result-not-posted = ⚠️ El resultado del sub-agente **{ $label }** no se pudo publicar en { $channel }: { $reason }. `/subagents info { $run }` y `/subagents log { $run }`, usados donde lo iniciaste, muestran el resultado.

## Una respuesta que no pudo terminar: por qué, y lo que tenía hasta entonces (sigue el texto del agente, tal cual).

reply-restarted = Me reiniciaron antes de que pudiera terminar de responder esto.
reply-ask-again = Vuelve a preguntar, por favor.
reply-failed = No pude responder: { $why }.
reply-so-far = Lo que tenía hasta ahora:
