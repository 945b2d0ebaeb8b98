-- A durable run's place in the sub-agent lane. lane_place: the process (executor id) holding one of the lane's
-- max_concurrent places for the run, from the claim until the run stops running (it ends, waits or pauses).
-- lane_priority: the run's place in line while it waits for one (1 + its member's lane runs before it), kept while
-- the run is live, so a woken run waits in line again.
ALTER TABLE runs ADD COLUMN lane_place TEXT;
ALTER TABLE runs ADD COLUMN lane_priority INTEGER;
CREATE INDEX runs_by_lane_place ON runs(lane_place) WHERE lane_place IS NOT NULL;
CREATE INDEX runs_waiting_for_lane ON runs(lane_priority, created_at)
    WHERE lane_priority IS NOT NULL AND lane_place IS NULL;
-- One row per lane, updated by every claim: the update's row lock takes claims one at a time across processes
-- (PostgreSQL; SQLite takes every write one at a time already), so two claims never both see the last free place.
CREATE TABLE lane_claims (lane TEXT PRIMARY KEY, claims BIGINT NOT NULL DEFAULT 0);
INSERT INTO lane_claims (lane) VALUES ('subagents');
