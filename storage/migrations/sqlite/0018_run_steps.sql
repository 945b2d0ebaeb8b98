-- Steps of durable runs journaled in the store, not in DBOS (bot/core/store_steps.py): what a step returned, under
-- <workflow id>#<step name>#<count>, written in the transaction that did the step's work, read back on replay.
CREATE TABLE run_steps (
    step_key    TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs(id),
    output      TEXT NOT NULL
);
CREATE INDEX run_steps_by_run ON run_steps(run_id);
-- Inbox and decision takes are such steps now and no longer tag the rows they take; 0016's taken_by columns stay
-- until no process of the previous version can run (it still writes them while its runs finish): a later migration.
