## Why a post could not be delivered (the detail Discord gave stays as it came).

delivery-error-answered = Discord answered { $answer }
delivery-error-rate-limited = Discord rate-limited it for { $seconds }s
delivery-error-unreachable = Discord could not be reached ({ $reason })
delivery-error-other = { $detail }
# A delivery retried until the bound: how long, then the last failure's words.
delivery-gave-up = gave up after { $after } of retries, the last one: { $reason }
