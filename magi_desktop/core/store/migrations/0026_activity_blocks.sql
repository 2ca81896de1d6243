-- Activity blocks (issue 20, item 3; architecture §16 "Aggregation and tiers"): high-frequency, low-value
-- events (page visits, terminal commands, plays) are folded into one L1 event per topic and hour. The block
-- is an ordinary fact_events row with a natural key (each new member stores a new version of it,
-- store/supersede.py); these tables say which members it stands for, so window lists and summaries count
-- the block instead of its members, and forget can re-render or drop it (core/aggregation).

-- One row per (source, block natural key): what the block is about, stable across its versions.
CREATE TABLE activity_blocks (
    id          INTEGER PRIMARY KEY,
    source      TEXT    NOT NULL,
    natural_key TEXT    NOT NULL,
    rule        TEXT    NOT NULL,            -- the aggregation rule (and setting) that made it: browser, terminal …
    source_code TEXT    NOT NULL,            -- the members' activity.source_code
    topic       TEXT    NOT NULL,            -- the cluster: a domain, a program, an artist
    hour        REAL    NOT NULL,            -- the start of its clock hour (UTC)
    stale       INTEGER NOT NULL DEFAULT 0,  -- a forget took its live version: render it again from what is left
    UNIQUE (source, natural_key)
);
CREATE INDEX activity_blocks_stale ON activity_blocks (stale) WHERE stale = 1;

-- A member belongs to one block and goes with its event (forget). What the block shows of it is read from
-- the event itself at each rendering, so a re-redacted member never brings its old words back into its block.
CREATE TABLE activity_block_members (
    member_rowid INTEGER PRIMARY KEY REFERENCES fact_events (id) ON DELETE CASCADE,
    block_id     INTEGER NOT NULL REFERENCES activity_blocks (id) ON DELETE CASCADE
);
CREATE INDEX activity_block_members_block ON activity_block_members (block_id);

-- The user's choice per rule (absent: the rule's default, core/aggregation/rules.py).
CREATE TABLE aggregation_settings (
    rule       TEXT    PRIMARY KEY,
    enabled    INTEGER NOT NULL,
    updated_at REAL    NOT NULL
);
