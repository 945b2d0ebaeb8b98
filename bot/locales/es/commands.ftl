## Comandos de barra: sus descripciones, las de sus opciones y los nombres de las opciones a elegir.
## Los ids se forman con la ruta del comando (cmd-subagents-spawn, cmd-subagents-spawn-task) y el nombre de la opción.

cmd-subagents = Inicia y gestiona sub-agentes
cmd-subagents-spawn = Pon a un sub-agente a trabajar en una tarea; su resultado se publica aquí
cmd-subagents-spawn-agent = Id del agente en la configuración, p. ej. main (con runtime acp: el nombre de un agente ACP)
cmd-subagents-spawn-task = Qué debe hacer el sub-agente
cmd-subagents-spawn-model = Modelo como <proveedor>/<modelo>; por defecto, el configurado
cmd-subagents-spawn-thinking = Esfuerzo de razonamiento, en los modelos que lo admiten
cmd-subagents-spawn-thread = Da al sub-agente su propio hilo, donde puedes seguir hablando con él
cmd-subagents-spawn-runtime = subagent (el agente del bot, por defecto) o acp (un agente de código de [acp_agents])
cmd-subagents-spawn-attachment = Un archivo de texto o una imagen que el sub-agente lee junto con su tarea
cmd-subagents-tools = Qué puede llamar un agente aquí, y por qué no el resto
cmd-subagents-tools-agent = Id del agente en la configuración, p. ej. main
cmd-subagents-list = Sub-agentes activos y recientes (30 min) de esta conversación
cmd-subagents-info = Todo lo que se sabe de una ejecución de un sub-agente
cmd-subagents-info-target = Número de la lista, etiqueta, prefijo del id de ejecución, clave de sesión o 'last'
cmd-subagents-log = Los últimos mensajes de la transcripción de un sub-agente
cmd-subagents-log-target = Número de la lista, etiqueta, prefijo del id de ejecución, clave de sesión o 'last'
cmd-subagents-log-limit = Cuántos mensajes (1–200, 20 por defecto)
cmd-subagents-log-tools = Incluir las llamadas a herramientas y sus resultados
cmd-subagents-kill = Detén un sub-agente y todo lo que inició ('all' para todos)
cmd-subagents-kill-target = Número de la lista, etiqueta, prefijo del id de ejecución, clave de sesión, 'last' o 'all'
cmd-subagents-send = Escribe a un sub-agente sin detenerlo y muestra su respuesta
cmd-subagents-send-target = Número de la lista, etiqueta, prefijo del id de ejecución, clave de sesión o 'last'
cmd-subagents-send-message = Qué decirle
cmd-subagents-send-attachment = Un archivo de texto o una imagen que lee junto con el mensaje
cmd-subagents-steer = Cambia el rumbo de un sub-agente en curso en su próximo paso
cmd-subagents-steer-target = Número de la lista, etiqueta, prefijo del id de ejecución, clave de sesión o 'last'
cmd-subagents-steer-message = La nueva dirección (hasta 4.000 caracteres)
cmd-stop = Detén el turno actual del agente y sus sub-agentes aquí
cmd-session = Vida de la sesión enfocada en este hilo
cmd-session-idle = Muestra o fija cuánto puede estar callado este hilo antes de desvincularse
cmd-session-idle-duration = p. ej. 90m, 2h, 1d, un número de horas u off
cmd-session-max-age = Muestra o fija el límite máximo de la vinculación de este hilo
cmd-session-max-age-duration = p. ej. 8h, 1d, un número de horas u off
cmd-focus = Dirige este hilo (o uno nuevo) a la sesión de un sub-agente
cmd-focus-target = Número de la lista, etiqueta, prefijo del id de ejecución, clave de sesión o 'last'
cmd-unfocus = Deja de dirigir este hilo a su sesión
cmd-agents = Sub-agentes activos y vinculados a hilos de este canal
cmd-settings = Ajustes de threadbound en el servidor
cmd-settings-thread-bindings = Muestra o cambia aquí los ajustes de hilos vinculados
cmd-settings-thread-bindings-enabled = Permitir sesiones vinculadas a hilos
cmd-settings-thread-bindings-idle_hours = Desvincula un hilo tras estas horas sin actividad (0 = nunca)
cmd-settings-thread-bindings-max_age_hours = Desvincula un hilo estas horas después de vincularlo (0 = nunca)
cmd-settings-thread-bindings-spawn_subagent_sessions = Permitir iniciar sub-agentes en hilos nuevos
cmd-settings-thread-bindings-auto_archive_minutes = El archivado automático mínimo de Discord para los hilos que crea el bot
cmd-settings-thread-bindings-moderator_role = Quien tenga este rol puede detener y redirigir las ejecuciones de cualquiera
cmd-settings-streaming = Muestra o cambia si las respuestas aparecen mientras se escriben
cmd-settings-streaming-enabled = Publica las respuestas pronto y edítalas mientras el modelo escribe (desactivado: enteras)
cmd-settings-budgets = Muestra o cambia los topes de gasto y de ritmo de este servidor
cmd-settings-budgets-member_runs_per_hour = Ejecuciones que un miembro puede iniciar en una hora (0 = sin tope)
cmd-settings-budgets-member_tokens_per_day = Tokens que las ejecuciones de un miembro pueden usar al día, UTC (0 = sin tope)
cmd-settings-budgets-member_cost_per_day_usd = Dólares que las ejecuciones de un miembro pueden costar al día, UTC (0 = sin tope)
cmd-settings-budgets-member_concurrent_runs = Ejecuciones en curso a la vez de un miembro (0 = sin tope)
cmd-settings-budgets-server_runs_per_hour = Ejecuciones que todos aquí pueden iniciar en una hora (0 = sin tope)
cmd-settings-budgets-server_tokens_per_day = Tokens que todas las ejecuciones de aquí pueden usar al día, UTC (0 = sin tope)
cmd-settings-budgets-server_cost_per_day_usd = Dólares que todas las ejecuciones de aquí pueden costar al día, UTC (0 = sin tope)
cmd-settings-budgets-inherit = Quita el valor propio del servidor para un tope, y vuelve a regir [budgets] de la configuración
cmd-schedule = Agentes que se ejecutan según un horario
cmd-schedule-add = Ejecuta un agente según un horario cron y publica su respuesta
cmd-schedule-add-name = Un nombre para este horario, único en este servidor
cmd-schedule-add-cron = Cinco campos de crontab: minuto hora día-del-mes mes día-de-la-semana, p. ej. 0 9 * * 1-5
cmd-schedule-add-agent = Id del agente en la configuración, p. ej. main
cmd-schedule-add-prompt = Qué debe hacer el agente cada vez que se dispare
cmd-schedule-add-channel = Dónde se publica su respuesta (por defecto: aquí)
cmd-schedule-add-timezone = Zona horaria de los campos cron, un nombre IANA como Europe/Madrid (por defecto: UTC)
cmd-schedule-list = Los horarios de este servidor y cuándo se dispara cada uno
cmd-schedule-remove = Detén y borra un horario añadido con /schedule add
cmd-schedule-remove-name = El nombre del horario (los de config.toml se quitan allí)
cmd-usage = Ejecuciones, tokens, coste y topes: los tuyos, o los de un miembro (moderadores)
cmd-usage-member = De quién mostrar el uso (solo moderadores; por defecto: el tuyo)
cmd-usage-period = día: hoy; semana: los últimos 7 días; mes: los últimos 30 días (días UTC)
cmd-memory = Lo que el bot recuerda en este servidor
cmd-memory-list = Lo que el bot recuerda de tus conversaciones (administradores: todo)
cmd-memory-forget = Borra un recuerdo (tuyo; administradores: de cualquiera)
cmd-memory-forget-id = El número del recuerdo, tal como lo muestra /memory list

# Opciones a elegir: niveles de razonamiento, runtimes, minutos de archivado, topes (claves de configuración), periodos.
choice-off = desactivado
choice-minimal = mínimo
choice-low = bajo
choice-medium = medio
choice-high = alto
choice-xhigh = muy alto
choice-max = máximo
choice-subagent = subagent
choice-acp = acp
choice-60 = 60
choice-1440 = 1440
choice-4320 = 4320
choice-10080 = 10080
choice-member_runs_per_hour = member_runs_per_hour
choice-member_tokens_per_day = member_tokens_per_day
choice-member_cost_per_day_usd = member_cost_per_day_usd
choice-member_concurrent_runs = member_concurrent_runs
choice-server_runs_per_hour = server_runs_per_hour
choice-server_tokens_per_day = server_tokens_per_day
choice-server_cost_per_day_usd = server_cost_per_day_usd
choice-day = día
choice-week = semana
choice-month = mes
