-- L2 structured cognition (architecture §6): the projection queue, resolved entities,
-- low-confidence mentions, knowledge-graph edges, trait assertions, snapshots and
-- episodes. Every derived row is tied to the L1 events behind it through
-- l2_evidence; when the last of them is deleted, the row goes too.

-- One job per cognition-eligible event, processed in micro-batches of one batch_key
-- (the payload's l2_batch_owner, else its session, else its source).
CREATE TABLE l2_projection_jobs (
    event_rowid      INTEGER PRIMARY KEY REFERENCES fact_events (id) ON DELETE CASCADE,
    batch_key        TEXT    NOT NULL,
    state            TEXT    NOT NULL DEFAULT 'pending',   -- pending | running | done | dead
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  REAL    NOT NULL DEFAULT 0,
    enqueued_at      REAL    NOT NULL,
    finished_at      REAL,
    last_error       TEXT
);
CREATE INDEX l2_projection_jobs_due ON l2_projection_jobs (state, next_attempt_at, batch_key);

CREATE TRIGGER fact_events_l2_enqueue AFTER INSERT ON fact_events WHEN new.cognition_eligible = 1 BEGIN
    INSERT INTO l2_projection_jobs (event_rowid, batch_key, enqueued_at)
    VALUES (new.id, coalesce('owner:' || json_extract(new.metadata_json, '$.l2_batch_owner'),
                             'session:' || new.session_id, 'source:' || new.source), new.ingested_at);
END;

-- Events stored before this migration are projected too.
INSERT INTO l2_projection_jobs (event_rowid, batch_key, enqueued_at)
SELECT id, coalesce('owner:' || json_extract(metadata_json, '$.l2_batch_owner'), 'session:' || session_id,
                    'source:' || source), ingested_at
FROM fact_events WHERE cognition_eligible = 1;

-- Entities gain a lifecycle: a merged entity points at the one that absorbed it.
ALTER TABLE entity_catalog ADD COLUMN status TEXT NOT NULL DEFAULT 'active';      -- active | merged
ALTER TABLE entity_catalog ADD COLUMN merged_into INTEGER REFERENCES entity_catalog (entity_id);
ALTER TABLE entity_catalog ADD COLUMN updated_at REAL;

-- Mentions too uncertain to bind to an entity yet (no type, low confidence).
CREATE TABLE entity_mentions (
    mention_id     INTEGER PRIMARY KEY,
    event_rowid    INTEGER NOT NULL REFERENCES fact_events (id) ON DELETE CASCADE,
    mention_text   TEXT    NOT NULL,
    name_key       TEXT    NOT NULL,
    entity_type    TEXT,
    confidence     REAL    NOT NULL,
    entity_id      INTEGER REFERENCES entity_catalog (entity_id) ON DELETE SET NULL,   -- once bound
    created_at     REAL    NOT NULL,
    UNIQUE (event_rowid, name_key)
);
CREATE INDEX entity_mentions_key ON entity_mentions (name_key);

-- Knowledge-graph edges: triple_id = uuid5(subject_id:predicate:object_id).
CREATE TABLE kg_edges (
    triple_id          TEXT    PRIMARY KEY,
    subject_id         INTEGER NOT NULL REFERENCES entity_catalog (entity_id),
    predicate          TEXT    NOT NULL,
    object_id          INTEGER NOT NULL REFERENCES entity_catalog (entity_id),
    status             TEXT    NOT NULL DEFAULT 'active',   -- active | superseded | retired
    confidence         REAL    NOT NULL,
    observations       INTEGER NOT NULL DEFAULT 1,
    first_observed_at  REAL    NOT NULL,
    last_observed_at   REAL    NOT NULL,
    strength           REAL,                                -- causal edges (CAUSED / LED_TO)
    superseded_by      TEXT,                                -- the triple that replaced it
    retired_at         REAL,
    retired_reason     TEXT,                                -- evolved | antonym | user_denied | orphaned
    edge_text          TEXT    NOT NULL,                    -- "Caroline LIVES_IN Jiaxing", for edge vectors
    embedded           INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX kg_edges_subject ON kg_edges (subject_id, predicate, status);
CREATE INDEX kg_edges_object ON kg_edges (object_id, status);

-- Traits and states of an entity. One current row per (entity, trait, value);
-- a retired row stays as history with the reason and what replaced it.
CREATE TABLE tom_trait_assertions (
    assertion_id       INTEGER PRIMARY KEY,
    entity_id          INTEGER NOT NULL REFERENCES entity_catalog (entity_id),
    trait              TEXT    NOT NULL,
    value              TEXT    NOT NULL,
    value_key          TEXT    NOT NULL,
    term               TEXT    NOT NULL,                    -- long | short
    status             TEXT    NOT NULL,                    -- tentative | corroborated | stable |
                                                            -- overwritten | expired | user_denied | superseded
    confidence         REAL    NOT NULL,
    observations       INTEGER NOT NULL DEFAULT 1,
    first_observed_at  REAL    NOT NULL,
    last_observed_at   REAL    NOT NULL,
    expires_at         REAL,                                -- short-term states
    replaces           INTEGER,                             -- the row it replaced (kept in step by triggers)
    superseded_by      INTEGER,                             -- the row that replaced it
    retired_at         REAL,
    triple_id          TEXT                                 -- the edge that stated it, if any
);
CREATE UNIQUE INDEX tom_trait_assertions_current ON tom_trait_assertions (entity_id, trait, value_key)
    WHERE status IN ('tentative', 'corroborated', 'stable');
CREATE INDEX tom_trait_assertions_entity ON tom_trait_assertions (entity_id, trait, status);

-- The current picture of an entity, rebuilt from its live assertions and edges.
CREATE TABLE tom_snapshots (
    entity_id      INTEGER PRIMARY KEY REFERENCES entity_catalog (entity_id) ON DELETE CASCADE,
    snapshot_json  TEXT    NOT NULL,
    refreshed_at   REAL    NOT NULL
);
CREATE TABLE snapshot_refresh_queue (
    entity_id      INTEGER PRIMARY KEY REFERENCES entity_catalog (entity_id) ON DELETE CASCADE,
    enqueued_at    REAL    NOT NULL
);

-- Episodes: a stretch of related activity (candidate -> promoted | discarded | merged).
CREATE TABLE l2_episodes (
    episode_id     INTEGER PRIMARY KEY,
    batch_key      TEXT    NOT NULL,
    status         TEXT    NOT NULL DEFAULT 'candidate',
    merged_into    INTEGER REFERENCES l2_episodes (episode_id) ON DELETE SET NULL,
    title          TEXT    NOT NULL,
    start_at       REAL    NOT NULL,
    end_at         REAL    NOT NULL,
    event_count    INTEGER NOT NULL,
    entity_ids_json TEXT   NOT NULL DEFAULT '[]',
    updated_at     REAL    NOT NULL
);
CREATE INDEX l2_episodes_time ON l2_episodes (status, start_at);

-- Provenance of every L2 row: kind = edge | assertion | episode, row_key = its id as text.
CREATE TABLE l2_evidence (
    kind           TEXT    NOT NULL,
    row_key        TEXT    NOT NULL,
    event_rowid    INTEGER NOT NULL REFERENCES fact_events (id) ON DELETE CASCADE,
    PRIMARY KEY (kind, row_key, event_rowid)
) WITHOUT ROWID;
CREATE INDEX l2_evidence_event ON l2_evidence (event_rowid);

-- Forgetting the last supporting event forgets the derived row; what it had replaced is
-- current again; the entity's snapshot is rebuilt; an episode is recounted and retitled from
-- what remains; a causal hypothesis (weak LED_TO, citing two events) goes with either event.
CREATE TRIGGER l2_evidence_orphans AFTER DELETE ON l2_evidence BEGIN
    INSERT OR IGNORE INTO snapshot_refresh_queue (entity_id, enqueued_at)
        SELECT subject_id, 0 FROM kg_edges WHERE old.kind = 'edge' AND triple_id = old.row_key
        UNION SELECT entity_id, 0 FROM tom_trait_assertions
              WHERE old.kind = 'assertion' AND assertion_id = CAST(old.row_key AS INTEGER);
    DELETE FROM kg_edges WHERE old.kind = 'edge' AND triple_id = old.row_key AND predicate = 'LED_TO'
        AND strength IS NOT NULL AND strength < 0.3;
    UPDATE l2_episodes SET
        event_count = (SELECT count(*) FROM l2_evidence WHERE kind = 'episode' AND row_key = old.row_key),
        title = coalesce((SELECT substr(e.content, 1, 80) FROM l2_evidence v JOIN fact_events e ON e.id = v.event_rowid
                          WHERE v.kind = 'episode' AND v.row_key = old.row_key
                          ORDER BY e.author_type != 'user', e.timestamp LIMIT 1), title)
    WHERE old.kind = 'episode' AND episode_id = CAST(old.row_key AS INTEGER);
    DELETE FROM kg_edges WHERE old.kind = 'edge' AND triple_id = old.row_key
        AND NOT EXISTS (SELECT 1 FROM l2_evidence WHERE kind = 'edge' AND row_key = old.row_key);
    DELETE FROM tom_trait_assertions WHERE old.kind = 'assertion' AND assertion_id = CAST(old.row_key AS INTEGER)
        AND NOT EXISTS (SELECT 1 FROM l2_evidence WHERE kind = 'assertion' AND row_key = old.row_key);
    DELETE FROM l2_episodes WHERE old.kind = 'episode' AND episode_id = CAST(old.row_key AS INTEGER)
        AND NOT EXISTS (SELECT 1 FROM l2_evidence WHERE kind = 'episode' AND row_key = old.row_key);
END;

-- A row that replaced another is gone (its evidence was forgotten): the one it replaced is current again.
CREATE TRIGGER kg_edges_reinstate AFTER DELETE ON kg_edges BEGIN
    UPDATE kg_edges SET status = 'active', superseded_by = NULL, retired_at = NULL, retired_reason = NULL
    WHERE superseded_by = old.triple_id;
    DELETE FROM l2_evidence WHERE kind = 'edge' AND row_key = old.triple_id;
END;
CREATE TRIGGER tom_trait_assertions_reinstate AFTER DELETE ON tom_trait_assertions BEGIN
    UPDATE tom_trait_assertions SET status = CASE WHEN observations > 1 THEN 'corroborated' ELSE 'tentative' END,
        superseded_by = NULL, retired_at = NULL
    WHERE superseded_by = old.assertion_id AND status IN ('superseded', 'overwritten');
    UPDATE tom_trait_assertions SET replaces = NULL WHERE replaces = old.assertion_id;
    DELETE FROM l2_evidence WHERE kind = 'assertion' AND row_key = CAST(old.assertion_id AS TEXT);
END;
