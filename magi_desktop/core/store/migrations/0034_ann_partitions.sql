-- The approximate chunk index is one usearch file per scope code (store/ann.py): a question about some scopes
-- searches only their files, not every hot chunk's. vector_index.ann_file now names the generation (NULL: none;
-- '': being built) and these rows its files; one transaction writes both, so a reader sees one generation whole.
CREATE TABLE ann_partitions (
    scope_code INTEGER PRIMARY KEY,         -- store/vectors.py SCOPE_CODES
    file       TEXT    NOT NULL,            -- beside the database
    vectors    INTEGER NOT NULL
);
-- A single-file index from before is none: the embedding worker builds the partitioned one from vec0 (and removes
-- the old file), and until then nothing is pending for it.
UPDATE vector_index SET ann_file = NULL, ann_vectors = 0 WHERE ann_file IS NOT NULL;
DELETE FROM chunk_vectors_pending;
