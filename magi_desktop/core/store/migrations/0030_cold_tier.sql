-- Hot and cold (issue 20, architecture "Aggregation and tiers"): an old event that L3 has summarised and
-- nothing current rests on moves to the cold tier. Its row stays in fact_events — evidence trails, window
-- lists, summaries' drill-down, forget and export read it as before — but its full-text terms and its
-- vectors move to indexes of their own (fact_events_cold_fts here, chunk_vectors_cold beside the vec0
-- tables), which default recall does not search: the hot indexes stop growing with all of history.
--   tier 0: hot, looked at again by the next tiering run; 1: cold; 2: hot for good (the user's own words).
ALTER TABLE fact_events ADD COLUMN tier INTEGER NOT NULL DEFAULT 0;
CREATE INDEX fact_events_untiered ON fact_events (timestamp) WHERE tier = 0;

CREATE VIRTUAL TABLE fact_events_cold_fts USING fts5(
    content,
    context,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER fact_events_cold_fts_delete AFTER DELETE ON fact_events WHEN old.tier = 1 BEGIN
    DELETE FROM fact_events_cold_fts WHERE rowid = old.id;
END;

-- A corrected or re-redacted event is indexed again in its own tier's index.
DROP TRIGGER fact_events_fts_update;
CREATE TRIGGER fact_events_fts_update AFTER UPDATE OF content ON fact_events WHEN new.tier <> 1 BEGIN
    DELETE FROM fact_events_fts WHERE rowid = old.id;
    INSERT INTO fact_events_fts (rowid, content, context)
    SELECT new.id, magi_fts_index(new.content, json_extract(new.metadata_json, '$.timeline.speaker')), c.context
    FROM fact_events_context c WHERE c.id = new.id;
END;
CREATE TRIGGER fact_events_cold_fts_update AFTER UPDATE OF content ON fact_events WHEN new.tier = 1 BEGIN
    DELETE FROM fact_events_cold_fts WHERE rowid = old.id;
    INSERT INTO fact_events_cold_fts (rowid, content, context)
    SELECT new.id, magi_fts_index(new.content, json_extract(new.metadata_json, '$.timeline.speaker')), c.context
    FROM fact_events_context c WHERE c.id = new.id;
END;

-- The turn after a deleted one named it as context: index it again without it, in its own tier's index.
DROP TRIGGER fact_events_fts_context_delete;
CREATE TRIGGER fact_events_fts_context_delete AFTER DELETE ON fact_events
WHEN old.session_id IS NOT NULL BEGIN
    DELETE FROM fact_events_fts WHERE rowid = (
        SELECT n.id FROM fact_events n
        WHERE n.session_id = old.session_id AND n.tier <> 1 AND (n.timestamp > old.timestamp OR
                                                                 (n.timestamp = old.timestamp AND n.id > old.id))
        ORDER BY n.timestamp, n.id LIMIT 1);
    DELETE FROM fact_events_cold_fts WHERE rowid = (
        SELECT n.id FROM fact_events n
        WHERE n.session_id = old.session_id AND n.tier = 1 AND (n.timestamp > old.timestamp OR
                                                                (n.timestamp = old.timestamp AND n.id > old.id))
        ORDER BY n.timestamp, n.id LIMIT 1);
    INSERT INTO fact_events_fts (rowid, content, context)
    SELECT n.id, magi_fts_index(n.content, json_extract(n.metadata_json, '$.timeline.speaker')), c.context
    FROM fact_events n JOIN fact_events_context c ON c.id = n.id
    WHERE n.id = (SELECT m.id FROM fact_events m
                  WHERE m.session_id = old.session_id AND (m.timestamp > old.timestamp OR
                                                           (m.timestamp = old.timestamp AND m.id > old.id))
                  ORDER BY m.timestamp, m.id LIMIT 1) AND n.tier <> 1;
    INSERT INTO fact_events_cold_fts (rowid, content, context)
    SELECT n.id, magi_fts_index(n.content, json_extract(n.metadata_json, '$.timeline.speaker')), c.context
    FROM fact_events n JOIN fact_events_context c ON c.id = n.id
    WHERE n.id = (SELECT m.id FROM fact_events m
                  WHERE m.session_id = old.session_id AND (m.timestamp > old.timestamp OR
                                                           (m.timestamp = old.timestamp AND m.id > old.id))
                  ORDER BY m.timestamp, m.id LIMIT 1) AND n.tier = 1;
END;
