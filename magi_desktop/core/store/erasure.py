"""What makes a deletion an erasure inside the database files (issue 16, architecture §14 "forget is real").

* ``secure_delete`` is on for every connection (:mod:`.connection`): deleted cells, the space an updated
  row leaves and freed pages are overwritten with zeros as they are written.
* A full-text index keeps a deleted row's terms until its segments are merged: :func:`merge_fts`.
* The write-ahead log still holds the old page images until a checkpoint copies the pages back and the
  log is truncated — which cannot happen while a reader (here or in another process) keeps an older
  snapshot: :func:`truncate_wal` tries without holding other writers up for long, and says whether it
  completed.
* A database written before this version may keep deleted bytes in free pages and in the unused space of
  live pages: :func:`vacuum_legacy_free_space` rewrites it once (``VACUUM``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

from .connection import BUSY_TIMEOUT_MS, Connection, DatabaseError, is_busy, write_transaction

log = logging.getLogger(__name__)

# How long the truncating checkpoint may wait for readers: it blocks new writers while it waits.
CHECKPOINT_WAIT_MS = 100
LEGACY_FREE_SPACE = "free_space_unscrubbed"       # memory_meta key set by migration 0014
FTS_MERGED_AT = "fts_merged_at"                   # memory_meta: when the indexes were last merged whole


def fts_tables(conn: Connection) -> list[str]:
    """Every FTS5 table of the schema."""
    return [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%' "
        "ORDER BY name")]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _optimize(conn: Connection, table: str) -> None:
    conn.execute(f"INSERT INTO {_quoted(table)} ({_quoted(table)}) VALUES ('optimize')")


def merge_fts(conn: Connection, deleted_at: float | None = None) -> bool:
    """Rewrite every full-text index without the rows deleted from it, in one write transaction. Every index
    here is contentless (``contentless_delete=1``): a deletion only records the rowid as gone (FTS5's own
    ``secure-delete`` needs the deleted text, which such a table does not keep), and the row's terms stay in
    the index segments until they are merged — ``optimize`` merges them all. About 0.25 s for 50k events:
    run once per scrub, not per chunk, and skipped when done since ``deleted_at`` already (a scrub retried
    while a reader holds it up). Returns whether it ran."""
    if deleted_at is not None:
        row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (FTS_MERGED_AT,)).fetchone()
        if row and float(row[0]) >= deleted_at:
            return False
    with write_transaction(conn):
        started = time.time()
        for table in fts_tables(conn):
            _optimize(conn, table)
        conn.execute("INSERT OR REPLACE INTO memory_meta (key, value) VALUES (?, ?)", (FTS_MERGED_AT, repr(started)))
    return True


def truncate_wal(conn: Connection) -> bool:
    """Checkpoint the write-ahead log into the database and truncate it to nothing; True when that
    completed. False while another connection reads an older snapshot (its pages must stay as they were):
    call again later. Waits at most :data:`CHECKPOINT_WAIT_MS` for readers, since a truncating checkpoint
    blocks new writers while it waits."""
    conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
    try:
        busy, frames, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except DatabaseError as exc:
        if not is_busy(exc):
            raise
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return busy == 0 and frames <= 0


def needs_legacy_vacuum(conn: Connection) -> bool:
    return conn.execute("SELECT 1 FROM memory_meta WHERE key = ?", (LEGACY_FREE_SPACE,)).fetchone() is not None


def vacuum_legacy_free_space(conn: Connection) -> bool:
    """Once per database written before secure_delete was always on: merge every full-text index (old
    tombstones), then ``VACUUM`` (no free page, no stale byte in a live page), then note it done. It holds
    the write lock for its whole length (seconds on a large memory: the one write that does). Returns
    whether it ran; a crash or a busy lock before the note leaves it to the next scrub."""
    if not needs_legacy_vacuum(conn):
        return False
    merge_fts(conn)
    conn.execute("VACUUM")              # cannot run inside a transaction
    with write_transaction(conn):
        conn.execute("DELETE FROM memory_meta WHERE key = ?", (LEGACY_FREE_SPACE,))
    log.info("rewrote the database once to clear what older versions left in its free space")
    return True


# ------------------------------------------------------------------ after re-redaction (reredact.py)


@contextlib.contextmanager
def secure_writes(conn: Connection) -> Iterator[None]:
    """``secure_delete`` for the writes inside: the old text's bytes are overwritten, not left in free pages."""
    before = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(before)}")


def scrub_rewritten_text(conn: Connection) -> None:
    """What forget does after its writes — the full-text indexes rewritten without the old terms (FTS5 only
    marks deletions until a merge), the write-ahead log that held the old pages checkpointed away — and a
    VACUUM: an updated row leaves older copies of itself in its page's free space (written before
    secure_delete was on, when the page was last rearranged), which only rebuilding the file removes.
    One small function so it can be routed through forget's scrub job."""
    with secure_writes(conn), write_transaction(conn):
        for table in fts_tables(conn):
            _optimize(conn, table)
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
