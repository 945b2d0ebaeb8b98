-- Scheduled agent jobs: a crontab expression (in a time zone) firing an agent with a prompt into a channel.
-- Config ones (source 'config') are synced from config.toml at start-up, by name; slash ones belong to a server.
-- claimed_through is how a slot fires exactly once: a firing moves it forward to its slot (compare-and-set,
-- in the transaction that persists the run), so a restart or a second timer finds the slot taken. Every slot at
-- or before it is done with: fired, skipped as too old, or before the schedule was (re)defined.
-- Their runs' sessions are main sessions with spawn_site 'cron' (one fresh session per firing).
CREATE TABLE schedules (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    name                  TEXT NOT NULL,
    source                TEXT NOT NULL CHECK (source IN ('config', 'slash')),
    cron                  TEXT NOT NULL,
    timezone              TEXT NOT NULL DEFAULT 'UTC',
    agent_id              TEXT NOT NULL,
    prompt                TEXT NOT NULL,
    channel_id            INTEGER NOT NULL,
    guild_id              INTEGER,
    created_by            INTEGER,
    created_at            REAL NOT NULL,
    claimed_through       REAL NOT NULL,
    last_fired_at         REAL,
    last_run_id           TEXT
);
CREATE UNIQUE INDEX schedules_config_names ON schedules(name) WHERE source = 'config';
CREATE UNIQUE INDEX schedules_server_names ON schedules(guild_id, name) WHERE source = 'slash';
