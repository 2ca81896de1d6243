-- L4 procedural experience (architecture §8): per (tool, category) statistics, the last traces, a circuit
-- breaker, and the strategy distilled from the traces.
CREATE TABLE procedural_skills (
    skill_id               INTEGER PRIMARY KEY,
    tool                   TEXT    NOT NULL,
    category               TEXT    NOT NULL,
    runs                   INTEGER NOT NULL DEFAULT 0,
    successes              INTEGER NOT NULL DEFAULT 0,
    failures               INTEGER NOT NULL DEFAULT 0,
    mean_duration_ms       REAL,
    consecutive_failures   INTEGER NOT NULL DEFAULT 0,
    breaker_state          TEXT    NOT NULL DEFAULT 'closed',   -- closed | open | half_open
    breaker_opened_at      REAL,
    half_open_successes    INTEGER NOT NULL DEFAULT 0,
    pending_trace_count    INTEGER NOT NULL DEFAULT 0,          -- traces since the last distillation
    distill_due            INTEGER NOT NULL DEFAULT 0,
    strategy_json          TEXT,
    optimized_prompt       TEXT,
    distilled_at           REAL,
    distilled_by           TEXT,
    last_run_at            REAL,
    UNIQUE (tool, category)
);

CREATE TABLE l4_execution_traces (
    trace_row      INTEGER PRIMARY KEY,
    skill_id       INTEGER NOT NULL REFERENCES procedural_skills (skill_id) ON DELETE CASCADE,
    runtime_id     INTEGER REFERENCES runtime_traces (id) ON DELETE SET NULL,
    occurred_at    REAL    NOT NULL,
    ok             INTEGER NOT NULL,
    duration_ms    REAL,
    input_text     TEXT,
    output_text    TEXT,
    error          TEXT
);
CREATE INDEX l4_execution_traces_skill ON l4_execution_traces (skill_id, occurred_at);

CREATE VIRTUAL TABLE procedural_skills_fts USING fts5(
    tool, category, strategy,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER procedural_skills_fts_insert AFTER INSERT ON procedural_skills BEGIN
    INSERT INTO procedural_skills_fts (rowid, tool, category, strategy)
    VALUES (new.skill_id, magi_fts_index(replace(replace(new.tool, '_', ' '), '.', ' '), NULL),
            magi_fts_index(replace(new.category, '_', ' '), NULL), magi_fts_index(new.optimized_prompt, NULL));
END;
CREATE TRIGGER procedural_skills_fts_update AFTER UPDATE OF optimized_prompt ON procedural_skills BEGIN
    DELETE FROM procedural_skills_fts WHERE rowid = old.skill_id;
    INSERT INTO procedural_skills_fts (rowid, tool, category, strategy)
    VALUES (new.skill_id, magi_fts_index(replace(replace(new.tool, '_', ' '), '.', ' '), NULL),
            magi_fts_index(replace(new.category, '_', ' '), NULL), magi_fts_index(new.optimized_prompt, NULL));
END;
CREATE TRIGGER procedural_skills_fts_delete AFTER DELETE ON procedural_skills BEGIN
    DELETE FROM procedural_skills_fts WHERE rowid = old.skill_id;
END;
