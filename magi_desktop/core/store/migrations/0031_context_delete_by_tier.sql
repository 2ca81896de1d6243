-- The turn after a deleted one named it as context: it is indexed again without it, in its own tier's index.
-- 0030's version looked for "the next turn of each tier" when deleting but re-inserted only the immediate next
-- turn, so a user's turn after a cold assistant turn lost its terms when the turn before the assistant's was
-- forgotten. Here the immediate next turn is found once, taken out of both indexes, and put back in its own.
DROP TRIGGER fact_events_fts_context_delete;
CREATE TRIGGER fact_events_fts_context_delete AFTER DELETE ON fact_events
WHEN old.session_id IS NOT NULL BEGIN
    DELETE FROM fact_events_fts WHERE rowid = (
        SELECT m.id FROM fact_events m
        WHERE m.session_id = old.session_id AND (m.timestamp > old.timestamp OR
                                                 (m.timestamp = old.timestamp AND m.id > old.id))
        ORDER BY m.timestamp, m.id LIMIT 1);
    DELETE FROM fact_events_cold_fts WHERE rowid = (
        SELECT m.id FROM fact_events m
        WHERE m.session_id = old.session_id AND (m.timestamp > old.timestamp OR
                                                 (m.timestamp = old.timestamp AND m.id > old.id))
        ORDER BY m.timestamp, m.id LIMIT 1);
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
