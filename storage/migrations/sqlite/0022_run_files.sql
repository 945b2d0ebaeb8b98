-- Files a run's agent returned with attach_file: posted with the run's announcement or reply, deleted with the run.
-- The content is text, redacted like everything stored; size is its UTF-8 length in bytes.
CREATE TABLE run_files (
    run_id                TEXT NOT NULL REFERENCES runs(id),
    name                  TEXT NOT NULL,
    content               TEXT NOT NULL,
    size                  INTEGER NOT NULL,
    position              INTEGER NOT NULL,
    created_at            REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);
