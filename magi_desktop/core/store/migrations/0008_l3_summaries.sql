-- L3 (architecture §7): time-window summaries (hour/day/week/month), thematic summaries and rule-made
-- insights, each linked to the L1 events behind it. window_key makes regeneration idempotent:
-- "day:2026-11-24", "insight:state_change:assertion:12".
CREATE TABLE l3_summaries (
    summary_id        INTEGER PRIMARY KEY,
    summary_type      TEXT    NOT NULL,            -- temporal | thematic | insight
    summary_category  TEXT    NOT NULL,            -- activity_overview | state_change | contradiction_resolved |
                                                   -- trend | task_reflection | topic
    granularity       TEXT,                        -- hour | day | week | month (temporal only)
    window_key        TEXT    NOT NULL UNIQUE,
    window_start      REAL    NOT NULL,
    window_end        REAL    NOT NULL,
    title             TEXT    NOT NULL,
    content           TEXT    NOT NULL,
    data_json         TEXT    NOT NULL DEFAULT '{}',   -- counts by source, top entities and topics, what is new
    event_count       INTEGER NOT NULL,
    fingerprint       TEXT    NOT NULL,                 -- what the window held when it was summarised
    model             TEXT    NOT NULL,                 -- "extractive", "rules" or the LLM's model
    created_at        REAL    NOT NULL,
    updated_at        REAL    NOT NULL
);
CREATE INDEX l3_summaries_window ON l3_summaries (summary_type, granularity, window_start);

CREATE TABLE summary_event_links (
    summary_id   INTEGER NOT NULL REFERENCES l3_summaries (summary_id) ON DELETE CASCADE,
    event_rowid  INTEGER NOT NULL REFERENCES fact_events (id) ON DELETE CASCADE,
    PRIMARY KEY (summary_id, event_rowid)
) WITHOUT ROWID;
CREATE INDEX summary_event_links_event ON summary_event_links (event_rowid);

-- Week and month summaries are built on the lower-level ones.
CREATE TABLE summary_children (
    summary_id   INTEGER NOT NULL REFERENCES l3_summaries (summary_id) ON DELETE CASCADE,
    child_id     INTEGER NOT NULL REFERENCES l3_summaries (summary_id) ON DELETE CASCADE,
    PRIMARY KEY (summary_id, child_id)
) WITHOUT ROWID;

CREATE VIRTUAL TABLE l3_summaries_fts USING fts5(
    title,
    content,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER l3_summaries_fts_insert AFTER INSERT ON l3_summaries BEGIN
    INSERT INTO l3_summaries_fts (rowid, title, content)
    VALUES (new.summary_id, magi_fts_index(new.title, NULL), magi_fts_index(new.content, NULL));
END;
CREATE TRIGGER l3_summaries_fts_update AFTER UPDATE OF title, content ON l3_summaries BEGIN
    DELETE FROM l3_summaries_fts WHERE rowid = old.summary_id;
    INSERT INTO l3_summaries_fts (rowid, title, content)
    VALUES (new.summary_id, magi_fts_index(new.title, NULL), magi_fts_index(new.content, NULL));
END;
CREATE TRIGGER l3_summaries_fts_delete AFTER DELETE ON l3_summaries BEGIN
    DELETE FROM l3_summaries_fts WHERE rowid = old.summary_id;
END;

-- How far each periodic job has run: a restart resumes here and never summarises a window twice.
CREATE TABLE periodic_jobs (
    job          TEXT PRIMARY KEY,      -- l3:hour, l3:day, l3:week, l3:month, l3:insights, …
    done_until   REAL NOT NULL,         -- windows ending at or before this are summarised
    last_run_at  REAL NOT NULL
);
