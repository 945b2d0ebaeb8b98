## Respuestas que se muestran mientras se escriben.

# La línea bajo una respuesta mientras el modelo aún la escribe.
draft-writing = escribiendo…
# La línea bajo una respuesta cuya ejecución se detuvo antes de terminar.
draft-stopped = detenida antes de terminar
# /settings streaming, en este servidor.
settings-streaming-on = Aquí las respuestas aparecen mientras se escriben: se publican pronto y se editan más o menos una vez por segundo.
settings-streaming-off = Aquí las respuestas se publican enteras, una vez terminadas.
