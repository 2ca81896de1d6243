-- L1 fact events (architecture §3.2) with their full-text index, the embedding
-- queue, the chat session index and per-source ingest counters.

-- Enumerated columns carry no CHECK constraints: the core writes them from its
-- own enums (governance.py, ingest.py), and the checks cost ~40% of an insert.
CREATE TABLE fact_events (
    id                  INTEGER PRIMARY KEY,          -- stable rowid for FTS/vector rows
    event_id            TEXT    NOT NULL UNIQUE,      -- ULID
    timestamp           REAL    NOT NULL,             -- when it happened (UNIX seconds, UTC)
    event_type          TEXT    NOT NULL,             -- CHAT_MESSAGE | SENSOR_EVENT | ACTION_EXECUTED
    source              TEXT    NOT NULL,
    source_item_id      TEXT,
    idempotency_key     TEXT    NOT NULL,
    session_id          TEXT,
    user_id             TEXT    NOT NULL,
    content             TEXT    NOT NULL,
    memory_domain       TEXT    NOT NULL,
    ingest_target       TEXT    NOT NULL,             -- l1_only | l1_and_l2
    cognition_eligible  INTEGER NOT NULL,             -- 0 | 1
    retention_class     TEXT    NOT NULL,             -- durable | compressible | ephemeral
    author_type         TEXT    NOT NULL,             -- user | assistant | tool | external | system
    content_type        TEXT    NOT NULL,             -- statement | question | directive | hypothetical | answer | observation | trace
    evidence_class      TEXT    NOT NULL,             -- governance.EvidenceClass
    l1_retrieval_scope  TEXT    NOT NULL,             -- fact_authoritative | conversation_only
    metadata_json       TEXT    NOT NULL DEFAULT '{}',
    ingested_at         REAL    NOT NULL,
    UNIQUE (source, event_type, idempotency_key)
);
CREATE INDEX fact_events_time ON fact_events (timestamp);
CREATE INDEX fact_events_session ON fact_events (session_id, timestamp) WHERE session_id IS NOT NULL;
CREATE INDEX fact_events_item ON fact_events (source_item_id) WHERE source_item_id IS NOT NULL;

-- Contentless FTS5 with contentless_delete: the indexed text is the content
-- with Chinese segmented by jieba (magi_fts_text, registered on every
-- connection), so it cannot be an external-content table of fact_events.
-- Inserts are written by store/l1.py in bulk, not by a trigger: FTS5 flushes
-- its pending terms at every statement savepoint, and a trigger opens one per
-- row, which made ingest several times slower and fragmented the index.
-- Deletes and updates (rare: forget, corrections) are kept in step by triggers.
CREATE VIRTUAL TABLE fact_events_fts USING fts5(
    content,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER fact_events_fts_delete AFTER DELETE ON fact_events BEGIN
    DELETE FROM fact_events_fts WHERE rowid = old.id;
END;
CREATE TRIGGER fact_events_fts_update AFTER UPDATE OF content ON fact_events BEGIN
    DELETE FROM fact_events_fts WHERE rowid = old.id;
    INSERT INTO fact_events_fts (rowid, content) VALUES (new.id, magi_fts_text(new.content));
END;

-- Vectors: long texts are chunked; each chunk has a row in the vec0 table
-- chunk_vectors (created at open time, because its dimension follows the model).
CREATE TABLE event_chunks (
    chunk_id     INTEGER PRIMARY KEY,
    event_rowid  INTEGER NOT NULL REFERENCES fact_events (id) ON DELETE CASCADE,
    chunk_index  INTEGER NOT NULL,
    char_start   INTEGER NOT NULL,   -- the chunk is content[char_start:char_end]
    char_end     INTEGER NOT NULL,
    model        TEXT    NOT NULL,
    UNIQUE (event_rowid, chunk_index)
);

CREATE TABLE vector_index (
    name         TEXT PRIMARY KEY,
    model        TEXT    NOT NULL,
    dimension    INTEGER NOT NULL,
    created_at   REAL    NOT NULL,
    rebuilt_from TEXT              -- the model whose vectors were dropped as stale
);

-- The embedding queue: a row per event still to embed. Done jobs are deleted
-- in the same transaction that writes their chunks; 'dead' is the dead letter.
CREATE TABLE embedding_jobs (
    event_rowid      INTEGER PRIMARY KEY REFERENCES fact_events (id) ON DELETE CASCADE,
    state            TEXT    NOT NULL DEFAULT 'pending',   -- pending | dead
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  REAL    NOT NULL DEFAULT 0,
    last_error       TEXT,
    enqueued_at      REAL    NOT NULL
);
CREATE INDEX embedding_jobs_due ON embedding_jobs (state, next_attempt_at);

CREATE TRIGGER fact_events_embed_enqueue AFTER INSERT ON fact_events BEGIN
    INSERT INTO embedding_jobs (event_rowid, enqueued_at) VALUES (new.id, new.ingested_at);
END;

-- Chat session index: kept in step with fact_events by triggers.
CREATE TABLE chat_sessions (
    session_id     TEXT PRIMARY KEY,
    user_id        TEXT    NOT NULL,
    source         TEXT    NOT NULL,
    first_event_at REAL    NOT NULL,
    last_event_at  REAL    NOT NULL,
    message_count  INTEGER NOT NULL
);

CREATE TRIGGER chat_sessions_insert AFTER INSERT ON fact_events
WHEN new.event_type = 'CHAT_MESSAGE' AND new.session_id IS NOT NULL BEGIN
    INSERT INTO chat_sessions (session_id, user_id, source, first_event_at, last_event_at, message_count)
    VALUES (new.session_id, new.user_id, new.source, new.timestamp, new.timestamp, 1)
    ON CONFLICT (session_id) DO UPDATE SET
        message_count  = message_count + 1,
        first_event_at = min(first_event_at, excluded.first_event_at),
        last_event_at  = max(last_event_at, excluded.last_event_at);
END;
CREATE TRIGGER chat_sessions_delete AFTER DELETE ON fact_events
WHEN old.event_type = 'CHAT_MESSAGE' AND old.session_id IS NOT NULL BEGIN
    UPDATE chat_sessions SET message_count = message_count - 1 WHERE session_id = old.session_id;
    DELETE FROM chat_sessions WHERE session_id = old.session_id AND message_count <= 0;
END;

-- system_runtime events and tool executions (ActionExecuted): audit only,
-- never part of the retrievable L1 evidence.
CREATE TABLE runtime_traces (
    id               INTEGER PRIMARY KEY,
    trace_id         TEXT    NOT NULL UNIQUE,
    timestamp        REAL    NOT NULL,
    event_type       TEXT    NOT NULL,
    source           TEXT    NOT NULL,
    source_item_id   TEXT,
    idempotency_key  TEXT    NOT NULL,
    session_id       TEXT,
    user_id          TEXT    NOT NULL,
    content          TEXT    NOT NULL,
    author_type      TEXT    NOT NULL,
    evidence_class   TEXT    NOT NULL,
    tool             TEXT,
    category         TEXT,
    ok               INTEGER,
    duration_ms      REAL,
    error            TEXT,
    metadata_json    TEXT    NOT NULL DEFAULT '{}',
    ingested_at      REAL    NOT NULL,
    UNIQUE (source, event_type, idempotency_key)
);
CREATE INDEX runtime_traces_tool ON runtime_traces (tool, category, timestamp) WHERE tool IS NOT NULL;
CREATE INDEX runtime_traces_time ON runtime_traces (timestamp);

-- Live counts of stored events (for status and the app, which must not scan
-- fact_events): incremented per batch by store/l1.py, decremented by trigger.
CREATE TABLE l1_event_counts (
    source              TEXT    NOT NULL,
    evidence_class      TEXT    NOT NULL,
    l1_retrieval_scope  TEXT    NOT NULL,
    events              INTEGER NOT NULL,
    PRIMARY KEY (source, evidence_class, l1_retrieval_scope)
) WITHOUT ROWID;

CREATE TRIGGER l1_event_counts_delete AFTER DELETE ON fact_events BEGIN
    UPDATE l1_event_counts SET events = events - 1
    WHERE source = old.source AND evidence_class = old.evidence_class
      AND l1_retrieval_scope = old.l1_retrieval_scope;
END;

-- Small facts about this database (e.g. the secret that keys dedupe hashes).
CREATE TABLE memory_meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
) WITHOUT ROWID;

-- Per-source ingest counters (what `magi status` shows per plugin).
CREATE TABLE source_counters (
    source          TEXT PRIMARY KEY,
    accepted        INTEGER NOT NULL DEFAULT 0,
    duplicates      INTEGER NOT NULL DEFAULT 0,
    rejected        INTEGER NOT NULL DEFAULT 0,
    last_rejection  TEXT,
    last_seen_at    REAL
);
