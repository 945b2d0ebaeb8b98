## Por qué no se pudo entregar una publicación (el detalle que dio Discord queda tal cual).

delivery-error-answered = Discord respondió { $answer }
delivery-error-rate-limited = Discord la limitó durante { $seconds } s
delivery-error-unreachable = no se pudo contactar con Discord ({ $reason })
delivery-error-other = { $detail }
# Una entrega reintentada hasta el límite: cuánto tiempo, y las palabras del último fallo.
delivery-gave-up = se abandonó tras { $after } de reintentos; el último: { $reason }
