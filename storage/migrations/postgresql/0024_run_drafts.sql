-- An answer posted while it is written: the messages it fills so far, edited as text arrives; the final text is
-- posted over them. message_ids is a JSON list; webhook_id is set when they were posted under the agent's persona.
-- guild_settings.streaming: whether this server sees answers while they are written (NULL: the config's default).
CREATE TABLE run_drafts (
    run_id                TEXT PRIMARY KEY REFERENCES runs(id),
    channel_id            BIGINT NOT NULL,
    message_ids           TEXT NOT NULL,
    webhook_id            BIGINT,
    updated_at            DOUBLE PRECISION NOT NULL
);
ALTER TABLE guild_settings ADD COLUMN streaming BIGINT;
