"""The search index kept by hand when it must be rebuilt: the full-text rows of every event made again and
every event queued to be embedded again (the background work re-embeds them)."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..store import Database, event_index

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
        low, high = event_index.event_rowid_range(self.db.reader())
        queued = 0
        with self.db.transaction() as conn:         # index rows of no event (outside the events' range)
            event_index.drop_rows_outside(conn, low or 0, high or 0)
        for first in range(low or 0, (high or -1) + 1, REINDEX_CHUNK):
            last = first + REINDEX_CHUNK - 1
            started = time.monotonic()
            with self.db.transaction() as conn:
                event_index.reindex_range(conn, first, last)
                queued += event_index.requeue_embedding_range(conn, first, last, time.time())
            time.sleep(min(0.1, time.monotonic() - started))      # another writer's turn
        self.notify()
        return queued
