-- The delivery failure's words (a message id and its arguments, JSON), so people read it in their language;
-- last_error keeps the English, for logs and the model.
ALTER TABLE outbox ADD COLUMN last_error_words TEXT;
