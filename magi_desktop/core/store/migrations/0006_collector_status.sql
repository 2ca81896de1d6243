-- What the supervisor last knew of each collector (runs, failures, quarantine, counters), so that
-- `magi status` in another process, and the next start of the app, can see it.
ALTER TABLE plugin_state ADD COLUMN status_json TEXT;
