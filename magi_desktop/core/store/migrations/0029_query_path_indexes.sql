-- Indexes the query paths need so a question about a window reads the window's index entries, not the
-- history's rows (issue 20, item 2). A window listing counts each source's events in the window and takes the
-- user's, then the newest: without this index SQLite read every event of the source through the
-- (source, event_type, idempotency_key) index and sorted the rows. It holds every column those statements
-- filter and sort on, so the count and the choice read the index alone and only the listed rows are fetched
-- ("what was I busy with last month?" at 260k events: 3.1 s of SQL before).
CREATE INDEX fact_events_source_time ON fact_events (source, timestamp, l1_retrieval_scope, recorded_at, author_type);
