-- Each binding's next automatic unbinding (idle or max-age, whichever comes first; NULL: none), written with every
-- change of the binding: one timer sweeps the due rows through this index, instead of a timer per binding.
ALTER TABLE thread_bindings ADD COLUMN deadline_at REAL;
UPDATE thread_bindings SET deadline_at = CASE
    WHEN idle_seconds > 0 AND max_age_seconds > 0
        THEN MIN(last_activity_at + idle_seconds, bound_at + max_age_seconds)
    WHEN idle_seconds > 0 THEN last_activity_at + idle_seconds
    WHEN max_age_seconds > 0 THEN bound_at + max_age_seconds
END;
CREATE INDEX bindings_by_deadline ON thread_bindings(deadline_at) WHERE deadline_at IS NOT NULL;
