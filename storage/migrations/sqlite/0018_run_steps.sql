-- Steps of durable runs journaled in the store, not in DBOS (bot/core/store_steps.py): what a step returned, under
-- <workflow id>#<step name>#<count>, written in the transaction that did the step's work, read back on replay.
CREATE TABLE run_steps (
    step_key    TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs(id),
    output      TEXT NOT NULL
);
CREATE INDEX run_steps_by_run ON run_steps(run_id);
-- Inbox and decision takes are such steps now: a take no longer tags the rows it takes (0016).
DROP INDEX inbox_taken_by;
ALTER TABLE run_inbox DROP COLUMN taken_by;
DROP INDEX approvals_taken_by;
ALTER TABLE approvals DROP COLUMN taken_by;
