-- Issue 17, item 6: speakers read from a turn's "Name: text" prefix (core/speakers.py). A candidate is
-- accepted when its name leads another turn of the memory; these indexes make that look-up (one per name
-- in a batch) cheap. They follow deletes like any index, so a forgotten turn leaves no name behind.
CREATE INDEX fact_events_speaker ON fact_events (json_extract(metadata_json, '$.timeline.speaker'))
    WHERE json_extract(metadata_json, '$.timeline.speaker') IS NOT NULL;
CREATE INDEX fact_events_speaker_candidate ON fact_events (json_extract(metadata_json, '$.timeline.speaker_candidate'))
    WHERE json_extract(metadata_json, '$.timeline.speaker_candidate') IS NOT NULL;

-- Issue 17, item 7: the times an event is about, read from its own words and resolved against its own
-- date (core/mentioned_times.py): "last month I got hurt", said in April, is about March. A calendar
-- window in a question matches an event's occurred_at or one of these. Derived from the content at
-- ingest; a row follows its event on delete.
CREATE TABLE event_mentioned_times (
    event_rowid  INTEGER NOT NULL REFERENCES fact_events (id) ON DELETE CASCADE,
    start        REAL    NOT NULL,     -- [start, end) in UNIX seconds
    end          REAL    NOT NULL,
    PRIMARY KEY (event_rowid, start, end)
) WITHOUT ROWID;
CREATE INDEX event_mentioned_times_window ON event_mentioned_times (start, end);
