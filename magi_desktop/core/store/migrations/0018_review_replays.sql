-- The user's reviews an import carried over (issue 16): L2 is not imported but rebuilt by the L2 worker,
-- and a review names its belief by local ids that mean nothing in the new memory. So a review is kept
-- here by natural keys (entity name + type, predicate, trait, value) and applied again, through the
-- normal confirm / delete / correct / merge, once the L2 worker has projected every event that was
-- recorded before the user made it (l2/replay.py); the events recorded after it wait until then.
CREATE TABLE review_replays (
    replay_id     INTEGER PRIMARY KEY,
    action        TEXT    NOT NULL,             -- confirm | delete | correct | merge
    target_json   TEXT    NOT NULL,             -- {"kind": "assertion" | "edge" | "entity", natural keys}
    detail_json   TEXT    NOT NULL DEFAULT '{}',-- correct: {"value", "event_rowid"}
    reviewed_at   REAL    NOT NULL,             -- when the user made the review
    hold_rowid    INTEGER,                      -- the first event recorded after it: L2 waits there
    state         TEXT    NOT NULL DEFAULT 'pending',   -- pending | applied | unmatched
    outcome       TEXT,                         -- unmatched: why (no such belief once rebuilt, …)
    review_id     INTEGER REFERENCES user_reviews (review_id) ON DELETE SET NULL
);
CREATE INDEX review_replays_pending ON review_replays (reviewed_at, replay_id) WHERE state = 'pending';
