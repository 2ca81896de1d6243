-- An episode was recounted and retitled from all its remaining events inside the trigger, once per deleted
-- evidence row: forgetting the events of a long episode (an always-on sensor without a two-hour gap makes one
-- of 20,000) cost O(n) per event, 10–30 ms each, and a forget chunk held the write lock for seconds (review of
-- issue 16). The trigger now only queues the episode; whoever deletes events (forget, a review's undo) brings
-- the queued episodes up to date once, in the same transaction (l2/episodes.py: upkeep).
CREATE TABLE l2_episode_upkeep (
    episode_id  INTEGER PRIMARY KEY
);

DROP TRIGGER l2_evidence_orphans;
CREATE TRIGGER l2_evidence_orphans AFTER DELETE ON l2_evidence BEGIN
    INSERT OR IGNORE INTO snapshot_refresh_queue (entity_id, enqueued_at)
        SELECT subject_id, 0 FROM kg_edges WHERE old.kind = 'edge' AND triple_id = old.row_key
        UNION SELECT entity_id, 0 FROM tom_trait_assertions
              WHERE old.kind = 'assertion' AND assertion_id = CAST(old.row_key AS INTEGER);
    DELETE FROM kg_edges WHERE old.kind = 'edge' AND triple_id = old.row_key AND predicate = 'LED_TO'
        AND strength IS NOT NULL AND strength < 0.3;
    INSERT OR IGNORE INTO l2_episode_upkeep (episode_id)
        SELECT CAST(old.row_key AS INTEGER) WHERE old.kind = 'episode';
    DELETE FROM kg_edges WHERE old.kind = 'edge' AND triple_id = old.row_key
        AND NOT EXISTS (SELECT 1 FROM l2_evidence WHERE kind = 'edge' AND row_key = old.row_key);
    DELETE FROM tom_trait_assertions WHERE old.kind = 'assertion' AND assertion_id = CAST(old.row_key AS INTEGER)
        AND NOT EXISTS (SELECT 1 FROM l2_evidence WHERE kind = 'assertion' AND row_key = old.row_key);
    DELETE FROM l2_episodes WHERE old.kind = 'episode' AND episode_id = CAST(old.row_key AS INTEGER)
        AND NOT EXISTS (SELECT 1 FROM l2_evidence WHERE kind = 'episode' AND row_key = old.row_key);
END;
