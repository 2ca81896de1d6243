-- The entity catalog (L2 extends it: resolution, types, merges) and the
-- event -> entity inverted index used by entity expansion at retrieval.
-- Filled at ingest from plugin entity hints, chat speakers, and a cheap
-- lookup of known names in the event text.

CREATE TABLE entity_catalog (
    entity_id     INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL,
    name_key      TEXT    NOT NULL,      -- casefolded, whitespace-normalised name
    entity_type   TEXT    NOT NULL,
    aliases_json  TEXT    NOT NULL DEFAULT '[]',
    created_at    REAL    NOT NULL,
    UNIQUE (name_key, entity_type)
);

CREATE TABLE l1_event_entities (
    event_rowid   INTEGER NOT NULL REFERENCES fact_events (id) ON DELETE CASCADE,
    entity_id     INTEGER NOT NULL REFERENCES entity_catalog (entity_id) ON DELETE CASCADE,
    entity_type   TEXT    NOT NULL,
    confidence    REAL    NOT NULL,      -- 1.0 plugin hint / speaker, 0.6 name found in the text
    PRIMARY KEY (event_rowid, entity_id)
) WITHOUT ROWID;
CREATE INDEX l1_event_entities_entity ON l1_event_entities (entity_id, event_rowid);
