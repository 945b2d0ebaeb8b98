## Palabras que usa toda parte del bot.

# Un rechazo privado: el prefijo y el motivo.
refusal = ⚠️ { $reason }
