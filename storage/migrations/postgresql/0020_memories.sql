-- Agents' memories: rows an agent identity keeps in one server (never a DM), found by full-text search. The
-- generated search column (English stemming) is indexed by GIN; SQLite's FTS5 table does the same there.
CREATE TABLE memories (
    id                    BIGSERIAL PRIMARY KEY,
    agent_id              TEXT NOT NULL,
    guild_id              BIGINT NOT NULL,
    key                   TEXT NOT NULL,
    content               TEXT NOT NULL,
    created_by_user_id    BIGINT,
    session_key           TEXT,
    run_id                TEXT,
    created_at            DOUBLE PRECISION NOT NULL,
    auto_saved            BIGINT NOT NULL DEFAULT 0,  -- saved by [memory] auto_save, not by memory_store
    search                TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', key || ' ' || content)) STORED,
    UNIQUE (agent_id, guild_id, key)
);
CREATE INDEX memories_by_guild ON memories(guild_id, created_by_user_id);
CREATE INDEX memories_by_age ON memories(created_at);
CREATE INDEX memories_auto_saved ON memories(agent_id, guild_id, created_at) WHERE auto_saved = 1;
CREATE INDEX memories_search ON memories USING GIN (search);
-- A spawn_subagent child's memory allowlist when its parent narrowed it (a JSON array of agent ids); a child with no
-- row here reads its parent's.
CREATE TABLE memory_allowlists (
    session_key           TEXT PRIMARY KEY REFERENCES sessions(key),
    agents                TEXT NOT NULL
);
