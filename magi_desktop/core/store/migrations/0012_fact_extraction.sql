-- Background fact extraction from whole conversations (architecture §9; the quote-gate seed, part 5).
--
-- A session has generations: ending a session (Memory.end_session) starts the next one, and an
-- extraction's pointers must stay inside one generation. Every chat message gets a row here when
-- it is stored; it is "extracted" once a committed extraction consumed it (extraction_id set),
-- which happens in the same transaction as that extraction's facts and episode. A claim (claim_id
-- with a lease) keeps two extractors off the same messages.

ALTER TABLE chat_sessions ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;

CREATE TABLE fact_extractions (
    extraction_id    INTEGER PRIMARY KEY,
    session_id       TEXT    NOT NULL,
    generation       INTEGER NOT NULL,
    extractor        TEXT    NOT NULL,                 -- the provider: rules | openai | scripted
    segments         INTEGER NOT NULL,
    message_count    INTEGER NOT NULL,
    first_at         REAL    NOT NULL,
    last_at          REAL    NOT NULL,
    episode          TEXT    NOT NULL,                 -- what the conversation did, accepted or not
    report_json      TEXT    NOT NULL DEFAULT '{}',    -- committed / rejected candidates with reasons
    created_at       REAL    NOT NULL
);
CREATE INDEX fact_extractions_session ON fact_extractions (session_id, generation);

CREATE TABLE chat_extraction (
    event_rowid      INTEGER PRIMARY KEY REFERENCES fact_events (id) ON DELETE CASCADE,
    session_id       TEXT    NOT NULL,
    generation       INTEGER NOT NULL,
    extraction_id    INTEGER REFERENCES fact_extractions (extraction_id) ON DELETE SET NULL,
    claim_id         TEXT,
    claimed_until    REAL
);
CREATE INDEX chat_extraction_pending ON chat_extraction (session_id, generation) WHERE extraction_id IS NULL;
CREATE INDEX chat_extraction_by_run ON chat_extraction (extraction_id) WHERE extraction_id IS NOT NULL;

-- Retries of a session generation whose extraction failed (nothing of it was written).
CREATE TABLE extraction_retries (
    session_id       TEXT    NOT NULL,
    generation       INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  REAL    NOT NULL DEFAULT 0,
    state            TEXT    NOT NULL DEFAULT 'pending',   -- pending | dead
    last_error       TEXT,
    PRIMARY KEY (session_id, generation)
) WITHOUT ROWID;

-- Messages stored before this migration were never offered to an extractor: they are pending.
INSERT INTO chat_extraction (event_rowid, session_id, generation)
    SELECT id, session_id, 0 FROM fact_events WHERE event_type = 'CHAT_MESSAGE' AND session_id IS NOT NULL;

CREATE TRIGGER chat_extraction_insert AFTER INSERT ON fact_events
WHEN new.event_type = 'CHAT_MESSAGE' AND new.session_id IS NOT NULL BEGIN
    INSERT INTO chat_extraction (event_rowid, session_id, generation)
    VALUES (new.id, new.session_id,
            coalesce((SELECT generation FROM chat_sessions WHERE session_id = new.session_id), 0));
END;

-- The conversation went on: a generation that had failed for good gets a fresh start.
CREATE TRIGGER chat_extraction_revive AFTER INSERT ON chat_extraction BEGIN
    DELETE FROM extraction_retries WHERE session_id = new.session_id AND generation = new.generation
        AND state = 'dead';
END;

-- An extraction whose messages were all forgotten goes, with its episode text.
CREATE TRIGGER chat_extraction_orphans AFTER DELETE ON chat_extraction
WHEN old.extraction_id IS NOT NULL BEGIN
    DELETE FROM fact_extractions WHERE extraction_id = old.extraction_id
        AND NOT EXISTS (SELECT 1 FROM chat_extraction WHERE extraction_id = old.extraction_id);
END;

-- Facts found by an extraction, and the generation their pointers belong to.
ALTER TABLE memory_facts ADD COLUMN extraction_id INTEGER REFERENCES fact_extractions (extraction_id)
    ON DELETE SET NULL;
ALTER TABLE memory_facts ADD COLUMN generation INTEGER;
ALTER TABLE memory_facts ADD COLUMN proposal_message_id TEXT;   -- for "accepted": the agent's conclusion
-- forget() finds the facts that point at a message, and what a forgotten fact had replaced.
CREATE INDEX memory_facts_source ON memory_facts (source_message_id);
CREATE INDEX memory_facts_accepting ON memory_facts (accepting_message_id) WHERE accepting_message_id IS NOT NULL;
CREATE INDEX memory_facts_proposal ON memory_facts (proposal_message_id) WHERE proposal_message_id IS NOT NULL;
CREATE INDEX memory_facts_successor ON memory_facts (superseded_by) WHERE superseded_by IS NOT NULL;

-- Facts are recalled by their words (retrieval/facts.py): a contentless index kept in step by triggers,
-- over the fact and the user's quote.
CREATE VIRTUAL TABLE memory_facts_fts USING fts5(
    content, quote,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memory_facts_fts (rowid, content, quote)
    SELECT fact_id, magi_fts_index(content, NULL), magi_fts_index(quote, NULL) FROM memory_facts;
CREATE TRIGGER memory_facts_fts_insert AFTER INSERT ON memory_facts BEGIN
    INSERT INTO memory_facts_fts (rowid, content, quote)
    VALUES (new.fact_id, magi_fts_index(new.content, NULL), magi_fts_index(new.quote, NULL));
END;
CREATE TRIGGER memory_facts_fts_update AFTER UPDATE OF content, quote ON memory_facts BEGIN
    DELETE FROM memory_facts_fts WHERE rowid = old.fact_id;
    INSERT INTO memory_facts_fts (rowid, content, quote)
    VALUES (new.fact_id, magi_fts_index(new.content, NULL), magi_fts_index(new.quote, NULL));
END;
CREATE TRIGGER memory_facts_fts_delete AFTER DELETE ON memory_facts BEGIN
    DELETE FROM memory_facts_fts WHERE rowid = old.fact_id;
END;
