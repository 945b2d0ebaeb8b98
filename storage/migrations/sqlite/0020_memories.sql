-- Agents' memories: rows an agent identity keeps in one server (never a DM), found by full-text search. The FTS5
-- table indexes the rows' key and content (porter stemming), kept in step with them by the triggers below.
CREATE TABLE memories (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id              TEXT NOT NULL,
    guild_id              INTEGER NOT NULL,
    key                   TEXT NOT NULL,
    content               TEXT NOT NULL,
    created_by_user_id    INTEGER,
    session_key           TEXT,
    run_id                TEXT,
    created_at            REAL NOT NULL,
    auto_saved            INTEGER NOT NULL DEFAULT 0,  -- saved by [memory] auto_save, not by memory_store
    UNIQUE (agent_id, guild_id, key)
);
CREATE INDEX memories_by_guild ON memories(guild_id, created_by_user_id);
CREATE INDEX memories_by_age ON memories(created_at);
CREATE INDEX memories_auto_saved ON memories(agent_id, guild_id, created_at) WHERE auto_saved = 1;
CREATE VIRTUAL TABLE memories_fts USING fts5(
    key, content, content='memories', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, key, content) VALUES (new.id, new.key, new.content);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content) VALUES ('delete', old.id, old.key, old.content);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content) VALUES ('delete', old.id, old.key, old.content);
    INSERT INTO memories_fts(rowid, key, content) VALUES (new.id, new.key, new.content);
END;
-- A spawn_subagent child's memory allowlist when its parent narrowed it (a JSON array of agent ids); a child with no
-- row here reads its parent's.
CREATE TABLE memory_allowlists (
    session_key           TEXT PRIMARY KEY REFERENCES sessions(key),
    agents                TEXT NOT NULL
);
