-- When each run started, for the metrics' count of runs started since a moment.
CREATE INDEX runs_by_start ON runs(started_at) WHERE started_at IS NOT NULL;
