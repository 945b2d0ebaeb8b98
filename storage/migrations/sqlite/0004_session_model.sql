-- A main session's model, when its agent switched it with `model_switch` (NULL: the agent's configured model).
ALTER TABLE sessions ADD COLUMN model TEXT;
