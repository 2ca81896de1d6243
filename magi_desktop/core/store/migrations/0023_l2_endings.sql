-- Facts the user said stopped without a new value (issue 17; l2/endings.py): which event ended which edge.
-- Kept apart from l2_evidence on purpose: an ending is not evidence *for* the fact. Forgetting the fact's own
-- message therefore forgets the fact (its last evidence goes) even when an ending names it, and forgetting
-- the ending (this row goes with its event) lets forget make the fact current again.
CREATE TABLE l2_endings (
    triple_id    TEXT    NOT NULL REFERENCES kg_edges (triple_id) ON DELETE CASCADE,
    event_rowid  INTEGER NOT NULL REFERENCES fact_events (id) ON DELETE CASCADE,
    ended_at     REAL    NOT NULL,
    PRIMARY KEY (triple_id, event_rowid)
) WITHOUT ROWID;
CREATE INDEX l2_endings_event ON l2_endings (event_rowid);
