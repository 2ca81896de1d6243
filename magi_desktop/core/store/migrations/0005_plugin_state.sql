-- Per-collector state the host keeps between runs: the cursor where the next run starts.
CREATE TABLE plugin_state (
    name         TEXT PRIMARY KEY,
    cursor_json  TEXT,
    updated_at   REAL NOT NULL
);
