-- A collector's failures in a row and its quarantine (issue 19): one record every process reads and updates in a
-- write transaction, apart from the status a supervisor rewrites whole after each run — so a quarantine set by
-- `magi collect` holds in the app, and a release from the CLI is not overwritten by a running app's old status.
ALTER TABLE plugin_state ADD COLUMN guard_json TEXT;
