"""The search index kept by hand when it must be rebuilt: the full-text rows of every event made again and
every event queued to be embedded again (the background work re-embeds them)."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..store import Database

# Events re-indexed per transaction by reindex() (~0.3 s each; issue 16: no long write holds others up).
REINDEX_CHUNK = 1000


class SearchIndex:
    def __init__(self, db: Database, notify: Callable[[], None]) -> None:
        self.db = db
        self.notify = notify     # the queued embeddings wait for the background work

    def reindex(self) -> int:
        """Rebuild the full-text index now and queue every event to be embedded again (the background
        work re-embeds them). Returns how many events were queued. One short transaction per
        ``REINDEX_CHUNK`` events (each range of rowids re-indexed whole, so searches stay complete
        meanwhile), and other writers get their turn between them."""
        low, high = self.db.reader().execute("SELECT min(id), max(id) FROM fact_events").fetchone()
        queued = 0
        with self.db.transaction() as conn:         # index rows of no event (outside the events' range)
            conn.execute("DELETE FROM fact_events_fts WHERE rowid < ? OR rowid > ?", (low or 0, high or 0))
        for first in range(low or 0, (high or -1) + 1, REINDEX_CHUNK):
            last = first + REINDEX_CHUNK - 1
            started = time.monotonic()
            with self.db.transaction() as conn:
                conn.execute("DELETE FROM fact_events_fts WHERE rowid BETWEEN ? AND ?", (first, last))
                conn.execute("INSERT INTO fact_events_fts (rowid, content, context) SELECT e.id, "
                             "magi_fts_index(e.content, json_extract(e.metadata_json, '$.timeline.speaker')), "
                             "c.context FROM fact_events e JOIN fact_events_context c ON c.id = e.id "
                             "WHERE e.id BETWEEN ? AND ?", (first, last))
                queued += conn.execute(
                    "INSERT INTO embedding_jobs (event_rowid, enqueued_at) SELECT id, ? FROM fact_events "
                    "WHERE id BETWEEN ? AND ? ON CONFLICT (event_rowid) DO UPDATE SET state = 'pending', "
                    "attempts = 0, next_attempt_at = 0, last_error = NULL", (time.time(), first, last)).rowcount
            time.sleep(min(0.1, time.monotonic() - started))      # another writer's turn
        self.notify()
        return queued
