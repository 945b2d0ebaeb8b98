-- Whose action budget a delegated session's launch was charged to (ZeroClaw's shared tracker): the budget key of
-- the calling session. NULL for sessions no agent action launched.
ALTER TABLE sessions ADD COLUMN charged_to TEXT;
CREATE INDEX sessions_charged_to ON sessions (charged_to, created_at);

-- One row per `delegate` child run: its task record. Background tasks are what check_result, list_results,
-- cancel_task and await_sessions read; a synchronous delegation's caller reads the same record when it settles.
CREATE TABLE delegate_tasks (
    task_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE REFERENCES runs (id),
    caller_session_key TEXT NOT NULL,
    agent TEXT NOT NULL,
    header TEXT NOT NULL,
    background INTEGER NOT NULL,
    status TEXT NOT NULL,
    output TEXT,
    error TEXT,
    note TEXT,
    started_at REAL NOT NULL,
    finished_at REAL,
    deadline REAL NOT NULL
);
CREATE INDEX delegate_tasks_caller ON delegate_tasks (caller_session_key, started_at);
CREATE INDEX delegate_tasks_running ON delegate_tasks (status, deadline);
