-- Sessions: one conversation with one agent. Depth and role are stored here, never parsed from the key.
CREATE TABLE sessions (
    key                   TEXT PRIMARY KEY,
    agent_id              TEXT NOT NULL,
    kind                  TEXT NOT NULL CHECK (kind IN ('main', 'subagent')),
    depth                 INTEGER NOT NULL DEFAULT 0,
    role                  TEXT NOT NULL CHECK (role IN ('main', 'orchestrator', 'leaf')),
    control_scope         TEXT NOT NULL CHECK (control_scope IN ('children', 'none')),
    requester_session_key TEXT REFERENCES sessions(key),
    label                 TEXT,
    task                  TEXT,
    mode                  TEXT NOT NULL DEFAULT 'run' CHECK (mode IN ('run', 'session')),
    cleanup               TEXT NOT NULL DEFAULT 'keep' CHECK (cleanup IN ('keep', 'delete')),
    sandboxed             INTEGER NOT NULL DEFAULT 0,
    guild_id              INTEGER,
    channel_id            INTEGER NOT NULL,
    owner_user_id         INTEGER,
    created_at            REAL NOT NULL,
    archive_at            REAL,
    archived_at           REAL
);
CREATE INDEX sessions_by_requester ON sessions(requester_session_key);
CREATE INDEX sessions_to_archive ON sessions(archive_at) WHERE archive_at IS NOT NULL AND archived_at IS NULL;

-- Runs: one execution inside a session. Status comes from the runtime outcome, never from model text.
CREATE TABLE runs (
    id                    TEXT PRIMARY KEY,
    session_key           TEXT NOT NULL REFERENCES sessions(key),
    parent_run_id         TEXT REFERENCES runs(id),
    kind                  TEXT NOT NULL CHECK (kind IN ('spawn', 'chat', 'followup')),
    status                TEXT NOT NULL CHECK (status IN ('queued', 'running', 'waiting_children',
                              'completed', 'failed', 'timed_out', 'killed', 'interrupted')),
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
    cost                  TEXT
);
CREATE INDEX runs_by_status ON runs(status);
CREATE INDEX runs_by_session ON runs(session_key, created_at);
CREATE INDEX runs_by_parent ON runs(parent_run_id);

-- Inbox: internal messages waiting for a run (child completions), consumed at its next model request
-- or by a wake. Written in the same transaction as the child's terminal state: exactly once per child run.
CREATE TABLE run_inbox (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id                TEXT NOT NULL REFERENCES runs(id),
    source_run_id         TEXT UNIQUE REFERENCES runs(id),
    content               TEXT NOT NULL,
    status                TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'consumed')),
    created_at            REAL NOT NULL,
    consumed_at           REAL
);
CREATE INDEX inbox_pending ON run_inbox(run_id, status);

-- Transcript: pydantic-ai ModelMessages, one JSON object per row, appended at each step of a run.
CREATE TABLE transcript_messages (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    session_key           TEXT NOT NULL REFERENCES sessions(key),
    run_id                TEXT NOT NULL REFERENCES runs(id),
    message_json          TEXT NOT NULL,
    created_at            REAL NOT NULL
);
CREATE INDEX transcript_by_session ON transcript_messages(session_key, id);

-- Outbox: what must reach Discord. Written in the same transaction as the state change that causes it.
CREATE TABLE outbox (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key       TEXT NOT NULL UNIQUE,
    run_id                TEXT REFERENCES runs(id),
    channel_id            INTEGER NOT NULL,
    payload_json          TEXT NOT NULL,
    status                TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    parts_sent            INTEGER NOT NULL DEFAULT 0,
    message_ids_json      TEXT NOT NULL DEFAULT '[]',
    attempts              INTEGER NOT NULL DEFAULT 0,
    next_attempt_at       REAL NOT NULL,
    last_error            TEXT,
    created_at            REAL NOT NULL,
    delivered_at          REAL
);
CREATE INDEX outbox_due ON outbox(status, next_attempt_at);

-- Small key/value facts about this installation (e.g. the hash of the last synced command schema).
CREATE TABLE meta (
    key                   TEXT PRIMARY KEY,
    value                 TEXT NOT NULL
);

-- Audit: every kill or steer a moderator does to someone else's run.
CREATE TABLE audit_log (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    guild_id              INTEGER,
    actor_user_id         INTEGER NOT NULL,
    target_user_id        INTEGER,
    action                TEXT NOT NULL,
    run_id                TEXT REFERENCES runs(id),
    detail                TEXT,
    created_at            REAL NOT NULL
);

-- Live status messages: one per top-level run, edited as it progresses and finalised when it ends.
CREATE TABLE status_messages (
    run_id                TEXT PRIMARY KEY REFERENCES runs(id),
    channel_id            INTEGER NOT NULL,
    message_id            INTEGER NOT NULL,
    final                 INTEGER NOT NULL DEFAULT 0
);

-- Thread bindings: a Discord thread (or DM) whose messages go to one session. The source of truth for routing
-- and for the idle / max-age deadlines, which are rebuilt from here at start-up.
CREATE TABLE thread_bindings (
    thread_id             INTEGER PRIMARY KEY,
    parent_channel_id     INTEGER,
    guild_id              INTEGER,
    session_key           TEXT NOT NULL REFERENCES sessions(key),
    bound_by              INTEGER,
    bound_at              REAL NOT NULL,
    last_activity_at      REAL NOT NULL,
    idle_seconds          REAL NOT NULL,
    max_age_seconds       REAL NOT NULL
);
CREATE INDEX bindings_by_session ON thread_bindings(session_key);

-- Per-server settings set by admins with /settings (NULL = inherit from the config file).
CREATE TABLE guild_settings (
    guild_id              INTEGER PRIMARY KEY,
    enabled               INTEGER,
    idle_hours            REAL,
    max_age_hours         REAL,
    spawn_subagent_sessions INTEGER,
    auto_archive_minutes  INTEGER,
    moderator_role_id     INTEGER,
    updated_by            INTEGER,
    updated_at            REAL
);

-- One webhook per parent channel, reused for every sub-agent persona posting in its threads.
CREATE TABLE channel_webhooks (
    channel_id            INTEGER PRIMARY KEY,
    webhook_id            INTEGER NOT NULL,
    token                 TEXT NOT NULL
);
