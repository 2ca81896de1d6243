-- Re-redaction receipts (issue 16): when the redaction rules grow, `magi redact` applies the current
-- rules to everything stored; each run keeps what it changed per table and per rule family — counts
-- only, never the secrets. The rules version the stored data was redacted with is in memory_meta
-- ('redaction_rules').
CREATE TABLE redaction_receipts (
    receipt_id        INTEGER PRIMARY KEY,
    started_at        REAL    NOT NULL,
    finished_at       REAL,                         -- NULL: interrupted (a later run starts over)
    rules_from        TEXT,                         -- the version the stored data had ('unknown': before versions)
    rules_to          TEXT    NOT NULL,
    rows_scanned      INTEGER NOT NULL DEFAULT 0,
    tables_json       TEXT    NOT NULL DEFAULT '{}', -- rows changed per table
    families_json     TEXT    NOT NULL DEFAULT '{}', -- replacements per rule family
    backups_replaced  INTEGER
);
