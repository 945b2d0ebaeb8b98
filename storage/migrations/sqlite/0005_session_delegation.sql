-- How a session was delegated, when it was: 'subagent' for a `spawn_subagent` child (an ephemeral run of the
-- same agent that answers its caller's tool call); NULL for every other session.
ALTER TABLE sessions ADD COLUMN delegation TEXT;
