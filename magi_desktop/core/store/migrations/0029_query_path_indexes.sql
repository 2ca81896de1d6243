-- Indexes the query paths need so a question about a window reads the window, not the history (issue 20,
-- item 2). A window listing takes each source's events of the window newest first: without (source,
-- timestamp) SQLite read every event of the source through the (source, event_type, idempotency_key) index
-- and sorted them — at a million events, 100k page visits for "what did I do yesterday".
CREATE INDEX fact_events_source_time ON fact_events (source, timestamp);
