-- Forget as a resumable job (issue 16). The request is committed first — the receipt in state
-- 'deleting' and the rows it will remove in forget_targets — then the rows go in short chunks, then the
-- scrub ('scrubbing') runs until no file of the memory holds them any more ('done').
ALTER TABLE forget_receipts ADD COLUMN state TEXT NOT NULL DEFAULT 'done';   -- deleting | scrubbing | done
ALTER TABLE forget_receipts ADD COLUMN deleted_at REAL;          -- when the last chunk was deleted
ALTER TABLE forget_receipts ADD COLUMN scrubbed_at REAL;         -- when the scrub completed
ALTER TABLE forget_receipts ADD COLUMN data_since REAL;          -- the earliest forgotten row was recorded then
-- Who runs a deleting job ("<pid>:<process start time>") and until when its lease holds (renewed with every
-- chunk): another process or thread takes the job over when that process is gone or the lease ran out
-- (a crash), never while it runs.
ALTER TABLE forget_receipts ADD COLUMN claimed_by TEXT;
ALTER TABLE forget_receipts ADD COLUMN claimed_until REAL;
-- 1: the criteria are keyed hashes (HMAC-SHA256 with forget_secret). Receipts written before this
-- migration named the entity and the items in clear: they are rewritten (and scrubbed) at the next open.
ALTER TABLE forget_receipts ADD COLUMN criteria_keyed INTEGER NOT NULL DEFAULT 0;
UPDATE forget_receipts SET state = 'scrubbing', deleted_at = created_at;

-- What a job still has to remove: L1 events, runtime traces, entities (by rowid); a chunk deletes its
-- rows and theirs here in the same transaction.
CREATE TABLE forget_targets (
    receipt_id    INTEGER NOT NULL REFERENCES forget_receipts (receipt_id) ON DELETE CASCADE,
    kind          TEXT    NOT NULL,          -- event | trace | entity
    target_rowid  INTEGER NOT NULL,
    PRIMARY KEY (receipt_id, kind, target_rowid)
) WITHOUT ROWID;

-- The key of the receipts' hashes: made on first use, never exported (an export that carried it would let
-- anyone holding the export test names against the receipts).
CREATE TABLE forget_secret (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    secret  BLOB    NOT NULL
);

-- Every export written to a path, so a receipt can list the earlier exports that may still hold what it
-- removed (the memory cannot reach into them).
CREATE TABLE export_log (
    export_id    INTEGER PRIMARY KEY,
    path         TEXT    NOT NULL,
    format       TEXT    NOT NULL,           -- jsonl | markdown
    exported_at  REAL    NOT NULL
);

-- A database that held data before this version may keep deleted bytes in free pages and in the unused
-- space of live pages (secure_delete was off but for forget's own transaction): its first scrub VACUUMs it
-- once. A new database has secure_delete on from its first write.
INSERT INTO memory_meta (key, value)
SELECT 'free_space_unscrubbed', '1'
WHERE EXISTS (SELECT 1 FROM fact_events) OR EXISTS (SELECT 1 FROM runtime_traces)
   OR EXISTS (SELECT 1 FROM forget_receipts) OR EXISTS (SELECT 1 FROM memory_facts)
   OR EXISTS (SELECT 1 FROM l3_summaries);
