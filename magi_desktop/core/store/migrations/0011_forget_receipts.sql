-- What forget() removed (architecture §14: forget is real): the criteria, the events and the count per table.
-- The receipt names no forgotten content, only ids and counts.
CREATE TABLE forget_receipts (
    receipt_id     INTEGER PRIMARY KEY,
    created_at     REAL    NOT NULL,
    criteria_json  TEXT    NOT NULL,
    event_ids_json TEXT    NOT NULL,
    counts_json    TEXT    NOT NULL
);
