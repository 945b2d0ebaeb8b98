-- Several processes share the outbox: a row being delivered is claimed by one of them (its executor id) until
-- claim_until, renewed while delivery goes on; the others skip it, and its channel, until the lease expires.
ALTER TABLE outbox ADD COLUMN claimed_by TEXT;
ALTER TABLE outbox ADD COLUMN claim_until DOUBLE PRECISION;
