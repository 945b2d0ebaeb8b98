-- Retention's scan of conversations' old turns, oldest first.
CREATE INDEX runs_by_end ON runs(ended_at) WHERE ended_at IS NOT NULL;
