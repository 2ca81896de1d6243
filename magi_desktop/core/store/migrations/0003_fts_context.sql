-- The full-text index gains a second column, `context`: the previous turn of
-- the conversation, searched at a lower weight (retrieval/paths.py). An answer
-- often shares no word with the question while its prompt does. Only a human
-- turn is ever context, so an assistant's words never make a user turn match.
-- Events are indexed as "speaker: text" (magi_fts_index), as at insert.

DROP TRIGGER fact_events_fts_delete;
DROP TRIGGER fact_events_fts_update;
DROP TABLE fact_events_fts;

CREATE VIRTUAL TABLE fact_events_fts USING fts5(
    content,
    context,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- The context a turn gets: the turn just before it in its session, if a human said it.
CREATE VIEW fact_events_context AS
SELECT e.id AS id,
       CASE WHEN e.session_id IS NULL THEN '' ELSE coalesce((
           SELECT CASE WHEN p.author_type = 'user'
                       THEN magi_fts_index(p.content, json_extract(p.metadata_json, '$.timeline.speaker'))
                       ELSE '' END
           FROM fact_events p
           WHERE p.session_id = e.session_id AND (p.timestamp < e.timestamp OR
                                                  (p.timestamp = e.timestamp AND p.id < e.id))
           ORDER BY p.timestamp DESC, p.id DESC LIMIT 1), '') END AS context
FROM fact_events e;

INSERT INTO fact_events_fts (rowid, content, context)
SELECT e.id, magi_fts_index(e.content, json_extract(e.metadata_json, '$.timeline.speaker')), c.context
FROM fact_events e JOIN fact_events_context c ON c.id = e.id;

CREATE TRIGGER fact_events_fts_delete AFTER DELETE ON fact_events BEGIN
    DELETE FROM fact_events_fts WHERE rowid = old.id;
END;

-- The turn after a deleted one named it as context: index it again without it.
CREATE TRIGGER fact_events_fts_context_delete AFTER DELETE ON fact_events
WHEN old.session_id IS NOT NULL BEGIN
    DELETE FROM fact_events_fts WHERE rowid = (
        SELECT n.id FROM fact_events n
        WHERE n.session_id = old.session_id AND (n.timestamp > old.timestamp OR
                                                 (n.timestamp = old.timestamp AND n.id > old.id))
        ORDER BY n.timestamp, n.id LIMIT 1);
    INSERT INTO fact_events_fts (rowid, content, context)
    SELECT n.id, magi_fts_index(n.content, json_extract(n.metadata_json, '$.timeline.speaker')), c.context
    FROM fact_events n JOIN fact_events_context c ON c.id = n.id
    WHERE n.session_id = old.session_id AND (n.timestamp > old.timestamp OR
                                             (n.timestamp = old.timestamp AND n.id > old.id))
    ORDER BY n.timestamp, n.id LIMIT 1;
END;

CREATE TRIGGER fact_events_fts_update AFTER UPDATE OF content ON fact_events BEGIN
    DELETE FROM fact_events_fts WHERE rowid = old.id;
    INSERT INTO fact_events_fts (rowid, content, context)
    SELECT new.id, magi_fts_index(new.content, json_extract(new.metadata_json, '$.timeline.speaker')), c.context
    FROM fact_events_context c WHERE c.id = new.id;
END;
