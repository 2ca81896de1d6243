-- Facts an agent saved with remember() (architecture §9). Evidence type: stated (the user said it, quote
-- checked) > accepted (the user accepted the agent's conclusion) > unknown (no proof kept). Rows
-- that predate the evidence type are unknown, never upgraded after the fact.
CREATE TABLE memory_facts (
    fact_id               INTEGER PRIMARY KEY,
    content               TEXT    NOT NULL,
    quote                 TEXT,
    scope                 TEXT    NOT NULL DEFAULT 'user',      -- user | project
    category              TEXT    NOT NULL DEFAULT 'knowledge',
    project               TEXT,
    evidence_type         TEXT    NOT NULL DEFAULT 'unknown'
                          CHECK (evidence_type IN ('stated', 'accepted', 'unknown')),
    source_message_id     TEXT,                                 -- the human message that holds the quote
    accepting_message_id  TEXT,                                 -- for "accepted": where the user accepted it
    session_id            TEXT,
    status                TEXT    NOT NULL DEFAULT 'active',    -- active | superseded | merged
    superseded_by         INTEGER REFERENCES memory_facts (fact_id),
    created_at            REAL    NOT NULL,
    updated_at            REAL    NOT NULL
);
CREATE INDEX memory_facts_active ON memory_facts (status, scope, category);
