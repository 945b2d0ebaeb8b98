-- Where a sub-agent session was spawned from, for its logs: 'slash' (a person's /subagents spawn), 'tool' (an
-- agent's sessions_spawn or spawn_subagent). NULL for main sessions and sessions made before this column.
ALTER TABLE sessions ADD COLUMN spawn_site TEXT;
