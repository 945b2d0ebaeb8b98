-- Approvals: a run may pause on tool calls a person must approve (a risk profile's always_ask). SQLite cannot
-- change a CHECK constraint in place, so runs is rebuilt with the new status; foreign keys are checked at commit,
-- when every row is back (the rows referencing runs are counted as orphans by the DROP and matched again by the
-- INSERT).
PRAGMA defer_foreign_keys = ON;
CREATE TEMP TABLE runs_before_approvals AS SELECT * FROM runs;
DROP TABLE runs;
CREATE TABLE runs (
    id                    TEXT PRIMARY KEY,
    session_key           TEXT NOT NULL REFERENCES sessions(key),
    parent_run_id         TEXT REFERENCES runs(id),
    kind                  TEXT NOT NULL CHECK (kind IN ('spawn', 'chat', 'followup')),
    status                TEXT NOT NULL CHECK (status IN ('queued', 'running', 'waiting_children',
                              'awaiting_approval', 'completed', 'failed', 'timed_out', 'killed', 'interrupted')),
    task                  TEXT NOT NULL,
    model                 TEXT NOT NULL,
    thinking              TEXT,
    timeout_seconds       INTEGER NOT NULL DEFAULT 0,
    requester_user_id     INTEGER,
    guild_id              INTEGER,
    channel_id            INTEGER NOT NULL,
    source_message_id     INTEGER,
    created_at            REAL NOT NULL,
    started_at            REAL,
    ended_at              REAL,
    error                 TEXT,
    result_text           TEXT,
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,
    requests              INTEGER NOT NULL DEFAULT 0,
    tool_calls            INTEGER NOT NULL DEFAULT 0,
    cost                  TEXT,
    served_model          TEXT
);
INSERT INTO runs SELECT * FROM runs_before_approvals;
DROP TABLE runs_before_approvals;
CREATE INDEX runs_by_status ON runs(status);
CREATE INDEX runs_by_session ON runs(session_key, created_at);
CREATE INDEX runs_by_parent ON runs(parent_run_id);

-- One row per always_ask tool call of a paused run: what was asked, where, until when, who decided, and the
-- Discord message that asks (posted once: message_id; shown: the status that message last showed).
CREATE TABLE approvals (
    id                    TEXT PRIMARY KEY,
    run_id                TEXT NOT NULL REFERENCES runs(id),
    tool_call_id          TEXT NOT NULL,
    tool_name             TEXT NOT NULL,
    arguments             TEXT NOT NULL,
    channel_id            INTEGER NOT NULL,
    owner_user_id         INTEGER,
    created_at            REAL NOT NULL,
    deadline              REAL NOT NULL,
    status                TEXT NOT NULL DEFAULT 'pending'
                              CHECK (status IN ('pending', 'approved', 'denied', 'timed_out', 'cancelled')),
    decided_by            INTEGER,
    decided_at            REAL,
    consumed              INTEGER NOT NULL DEFAULT 0,
    message_id            INTEGER,
    shown                 TEXT,
    UNIQUE (run_id, tool_call_id)
);
CREATE INDEX approvals_by_run ON approvals(run_id, status);
