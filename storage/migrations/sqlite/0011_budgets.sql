-- Usage by UTC day: what each member spent with each agent in each server (0 = no server, no member). Written in
-- the transaction that records the spending, and never pruned with the runs and transcripts it came from, so caps
-- and /usage keep their history. Cost is in billionths of a US dollar, so sums are exact.
CREATE TABLE usage_daily (
    day                   TEXT NOT NULL,
    guild_id              INTEGER NOT NULL,
    user_id               INTEGER NOT NULL,
    agent_id              TEXT NOT NULL,
    runs                  INTEGER NOT NULL DEFAULT 0,
    requests              INTEGER NOT NULL DEFAULT 0,
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,
    cost_nanousd          INTEGER NOT NULL DEFAULT 0,
    unpriced_requests     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, guild_id, user_id, agent_id)
);
CREATE INDEX usage_by_member ON usage_daily(guild_id, user_id, day);
CREATE INDEX usage_by_agent ON usage_daily(agent_id, day);

-- A server's own budget caps (``/settings budgets``); a key not set here inherits ``[budgets]``.
CREATE TABLE guild_budgets (
    guild_id              INTEGER NOT NULL,
    key                   TEXT NOT NULL,
    value                 TEXT NOT NULL,
    updated_by            INTEGER NOT NULL,
    updated_at            REAL NOT NULL,
    PRIMARY KEY (guild_id, key)
);

-- The 80% warnings already given: at most one per member, cap and day.
CREATE TABLE budget_warnings (
    day                   TEXT NOT NULL,
    guild_id              INTEGER NOT NULL,
    user_id               INTEGER NOT NULL,
    cap                   TEXT NOT NULL,
    created_at            REAL NOT NULL,
    PRIMARY KEY (day, guild_id, user_id, cap)
);

-- Runs per hour, by member and by server.
CREATE INDEX runs_by_requester ON runs(guild_id, requester_user_id, created_at);
CREATE INDEX runs_by_guild ON runs(guild_id, created_at);
