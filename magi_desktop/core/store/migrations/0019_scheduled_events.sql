-- Two times per event (issue 17, architecture §16): ``timestamp`` stays the time an event is *about*
-- (its occurred_at: a visit, a message, a meeting's start); ``recorded_at`` is when the memory could
-- first have known it, and it is what ``now`` hides. An event about the past counts as recorded at its
-- occurred_at (replays and "as of" questions keep working); a scheduled one (a payload with a
-- ``schedule``) from when it was first collected, so a plan is visible before it happens.
ALTER TABLE fact_events ADD COLUMN recorded_at REAL;
-- The payload's natural key (e.g. a calendar UID + occurrence): one live event per (source, key);
-- a new version supersedes the stored one (store/supersede.py).
ALTER TABLE fact_events ADD COLUMN natural_key TEXT;

UPDATE fact_events SET recorded_at = timestamp;
-- A row written without it (by an older tool, or SQL by hand) counts as recorded at its occurred_at.
CREATE TRIGGER fact_events_recorded_default AFTER INSERT ON fact_events WHEN new.recorded_at IS NULL BEGIN
    UPDATE fact_events SET recorded_at = new.timestamp WHERE id = new.id;
END;
-- Before this version only the calendar collector stored plans, each with its start, end and all-day flag
-- in its provenance: they get their schedule, and count as recorded when they were collected.
UPDATE fact_events SET
    recorded_at = min(timestamp, ingested_at),
    metadata_json = json_set(metadata_json, '$.schedule', json_object(
        'start', json_extract(metadata_json, '$.timeline.provenance.start'),
        'end', json_extract(metadata_json, '$.timeline.provenance.end'),
        'all_day', json(CASE WHEN json_extract(metadata_json, '$.timeline.provenance.all_day') THEN 'true'
                             ELSE 'false' END)))
WHERE source = 'calendar'
  AND json_extract(metadata_json, '$.timeline.activity.action_code') = 'calendar_event'
  AND json_type(metadata_json, '$.timeline.provenance.start') IN ('integer', 'real')
  AND json_type(metadata_json, '$.timeline.provenance.end') IN ('integer', 'real')
  AND json_extract(metadata_json, '$.timeline.provenance.start') = timestamp
  AND json_extract(metadata_json, '$.timeline.provenance.end') >= timestamp;

-- "As of now" counts and entity checks read visible events by their recorded time.
CREATE INDEX fact_events_recorded ON fact_events (recorded_at);
CREATE UNIQUE INDEX fact_events_natural_key ON fact_events (source, natural_key) WHERE natural_key IS NOT NULL;

-- The vector index keeps each chunk's visibility time (vec0 column ``occurred_at``, which now holds the
-- recorded time): the plans made visible above are embedded again so their vectors carry it.
INSERT OR IGNORE INTO embedding_jobs (event_rowid, enqueued_at)
    SELECT id, ingested_at FROM fact_events WHERE recorded_at < timestamp;

-- A version that a newer one superseded, or that was retired (a cancelled meeting): its row is deleted
-- from fact_events (so no path, count or export can return it) and this record, which holds no content,
-- says what became of it. Forgetting the version that replaced it deletes the record too.
CREATE TABLE l1_superseded (
    event_id       TEXT    PRIMARY KEY,         -- the retired version's event id
    source         TEXT    NOT NULL,
    superseded_by  TEXT,                        -- the live version's event id; NULL when retired
    superseded_at  REAL    NOT NULL
) WITHOUT ROWID;
CREATE INDEX l1_superseded_by ON l1_superseded (superseded_by) WHERE superseded_by IS NOT NULL;

CREATE TRIGGER l1_superseded_forget AFTER DELETE ON fact_events BEGIN
    DELETE FROM l1_superseded WHERE superseded_by = old.event_id;
END;
