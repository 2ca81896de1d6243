-- The chunk vectors' layout and their approximate index (issue 20).
-- layout 1: chunk_vectors carries the scope as text ('fact_authoritative' is 18 bytes, over sqlite-vec's 12-byte
-- limit for inline text metadata, so the scope filter read a side table and doubled the scan); layout 2: as an
-- integer code. store/vectors.py rebuilds a layout-1 table from itself when the memory opens.
ALTER TABLE vector_index ADD COLUMN layout INTEGER NOT NULL DEFAULT 1;
-- The approximate index file beside the database (store/ann.py): its name (NULL: none; '': being built) and how
-- many vectors it holds.
ALTER TABLE vector_index ADD COLUMN ann_file TEXT;
ALTER TABLE vector_index ADD COLUMN ann_vectors INTEGER NOT NULL DEFAULT 0;
-- Chunk vectors written while an approximate index exists or is being built, until the next index file holds
-- them: readers search these exactly (vec0 cannot read a rowid range without visiting every chunk of its table).
CREATE TABLE chunk_vectors_pending (
    chunk_id   INTEGER PRIMARY KEY,
    embedding  BLOB NOT NULL
);
CREATE TRIGGER event_chunks_pending_delete AFTER DELETE ON event_chunks BEGIN
    DELETE FROM chunk_vectors_pending WHERE chunk_id = old.chunk_id;
END;
