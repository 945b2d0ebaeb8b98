-- The files a person attached to a run's prompt: by URL and hash, not the bytes; a text file's text as the model read it.
CREATE TABLE run_attachments (
    run_id TEXT NOT NULL REFERENCES runs(id),
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    kind TEXT NOT NULL,
    media_type TEXT NOT NULL,
    text TEXT,
    PRIMARY KEY (run_id, position)
);
