-- Which step of a durable run's workflow took an inbox message or a decision (<workflow id>#<step number>): a step
-- that a crash cut off before its result was recorded runs again and takes the same rows again.
ALTER TABLE run_inbox ADD COLUMN taken_by TEXT;
ALTER TABLE approvals ADD COLUMN taken_by TEXT;
CREATE INDEX inbox_taken_by ON run_inbox(taken_by) WHERE taken_by IS NOT NULL;
CREATE INDEX approvals_taken_by ON approvals(taken_by) WHERE taken_by IS NOT NULL;
