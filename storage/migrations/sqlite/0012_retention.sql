-- Retention prunes old rows (see storage/retention.py). The audit log outlives the runs it names: its run_id
-- stays as the id people and logs know, but no longer references runs, so a pruned run takes nothing from it.
-- SQLite cannot drop a foreign key in place: rebuild the table.
CREATE TABLE audit_log_new (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    guild_id              INTEGER,
    actor_user_id         INTEGER NOT NULL,
    target_user_id        INTEGER,
    action                TEXT NOT NULL,
    run_id                TEXT,
    detail                TEXT,
    created_at            REAL NOT NULL
);
INSERT INTO audit_log_new SELECT id, guild_id, actor_user_id, target_user_id, action, run_id, detail, created_at
    FROM audit_log;
DROP TABLE audit_log;
ALTER TABLE audit_log_new RENAME TO audit_log;

-- The cutoff scans: archived sessions, old transcript rows, finished outbox rows, each oldest first.
CREATE INDEX sessions_archived ON sessions(archived_at) WHERE archived_at IS NOT NULL;
CREATE INDEX transcript_by_age ON transcript_messages(created_at);
CREATE INDEX outbox_finished ON outbox(created_at) WHERE status <> 'pending';
-- Deleting a run looks up every row that references it; without these, each lookup scans the whole table.
CREATE INDEX outbox_by_run ON outbox(run_id);
CREATE INDEX bindings_ending_with_run ON thread_bindings(ends_with_run_id);
