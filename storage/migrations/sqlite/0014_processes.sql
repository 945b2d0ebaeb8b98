-- Several bot processes on one store (bot/core/executors.py): one row per live process, by its executor id, with a
-- heartbeat; a process whose heartbeat is older than the lease is dead, and one live process claims it
-- (claimed_by) to resume or settle its runs. A run records the executor that admitted or last executed it, so a
-- process settles at start-up only its own leftovers (and rows from before this migration, owned by nobody).
CREATE TABLE processes (
    executor_id           TEXT PRIMARY KEY,
    pid                   INTEGER NOT NULL,
    host                  TEXT NOT NULL,
    shards                TEXT,
    started_at            REAL NOT NULL,
    heartbeat_at          REAL NOT NULL,
    claimed_by            TEXT
);
ALTER TABLE runs ADD COLUMN executor_id TEXT;
CREATE INDEX runs_by_executor ON runs(executor_id, status);
