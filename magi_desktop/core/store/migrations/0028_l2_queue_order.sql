-- L2 claims its next micro-batch oldest event first (store/queue.py: claim). The only index was
-- (state, next_attempt_at, batch_key): SQLite read every due pending job through it and sorted them all by
-- event rowid to take one, twice per batch (the head, then its batch key's jobs). With 969k events pending
-- on a 1M memory that sort was most of a batch's cost (issue 20: 39 events/s against 916 on a fresh memory).
-- Pending jobs in event order, the due check read from the index: the head is the first due entry.
CREATE INDEX l2_projection_jobs_order ON l2_projection_jobs (state, event_rowid, next_attempt_at);
-- A batch key's pending jobs in event order: its micro-batch is the first entries.
CREATE INDEX l2_projection_jobs_group ON l2_projection_jobs (state, batch_key, event_rowid);
-- The age of the oldest pending job (stats, the status window): the first entry, not a scan of all pending.
CREATE INDEX l2_projection_jobs_enqueued ON l2_projection_jobs (state, enqueued_at);
