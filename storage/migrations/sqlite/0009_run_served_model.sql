-- The configured model that gave a run's last answer: its requested model, or a later candidate of its agent's
-- fallback chain when that one failed (NULL: no answer yet, or a model that does not say, like the offline one).
ALTER TABLE runs ADD COLUMN served_model TEXT;
