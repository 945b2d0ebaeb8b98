-- A sub-agent session run by an ACP agent (runtime "acp") names it; NULL: the bot's own agent runtime.
ALTER TABLE sessions ADD COLUMN acp_agent TEXT;
-- What a live run is doing now (an ACP agent's tool call or plan), shown in its status; gone when its turn ends.
CREATE TABLE run_activity (
    run_id TEXT PRIMARY KEY,
    activity TEXT NOT NULL,
    updated_at REAL NOT NULL
);
