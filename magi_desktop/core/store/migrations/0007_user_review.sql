-- What the user said about the memory's beliefs (architecture §11), kept in the memory itself:
-- every confirm / correct / delete, with what the rows were before (for undo).
CREATE TABLE user_reviews (
    review_id     INTEGER PRIMARY KEY,
    action        TEXT    NOT NULL,             -- confirm | correct | delete | merge
    kind          TEXT    NOT NULL,             -- assertion | edge | entity
    row_key       TEXT    NOT NULL,
    before_json   TEXT    NOT NULL,             -- {"assertion:12": {column: value}, "edge:…": {…}}
    detail_json   TEXT    NOT NULL DEFAULT '{}',-- the new value, the correction's event, the row it made
    created_at    REAL    NOT NULL,
    undone_at     REAL
);
CREATE INDEX user_reviews_row ON user_reviews (kind, row_key);

-- What the user denied. The projection never re-creates a denied belief from evidence that was
-- already in memory when it was denied (re-running the same events); only a statement made later can.
CREATE TABLE user_denials (
    kind          TEXT    NOT NULL,             -- edge (triple id) | assertion (entity_id:trait:value_key)
    denial_key    TEXT    NOT NULL,
    review_id     INTEGER NOT NULL REFERENCES user_reviews (review_id) ON DELETE CASCADE,
    denied_at     REAL    NOT NULL,
    PRIMARY KEY (kind, denial_key)
);

ALTER TABLE kg_edges ADD COLUMN user_confirmed_at REAL;
ALTER TABLE tom_trait_assertions ADD COLUMN user_confirmed_at REAL;
