-- A session's history may hold context no run of it produced (a sub-agent's result recorded for the main
-- agent), so transcript rows may have no run. SQLite cannot drop NOT NULL in place: rebuild the table.
CREATE TABLE transcript_messages_new (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    session_key           TEXT NOT NULL REFERENCES sessions(key),
    run_id                TEXT REFERENCES runs(id),
    message_json          TEXT NOT NULL,
    created_at            REAL NOT NULL
);
INSERT INTO transcript_messages_new (id, session_key, run_id, message_json, created_at)
    SELECT id, session_key, run_id, message_json, created_at FROM transcript_messages;
DROP TABLE transcript_messages;
ALTER TABLE transcript_messages_new RENAME TO transcript_messages;
CREATE INDEX transcript_by_session ON transcript_messages(session_key, id);
CREATE INDEX transcript_by_run ON transcript_messages(run_id);

-- A binding that a run-mode spawn created ends with that run; every other binding outlives its runs.
ALTER TABLE thread_bindings ADD COLUMN ends_with_run_id TEXT REFERENCES runs(id);
