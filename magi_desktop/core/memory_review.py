"""The review part of ``Memory`` (architecture §11): what the memory believes, the evidence behind it,
and the user's confirm / correct / delete / undo, entities and aliases, activity by day.

A mixin of :class:`~magi_desktop.core.memory.Memory`: it uses the memory's database, entity
linker and normaliser, and is not used on its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .l2 import beliefs as l2_beliefs
from .l2 import episodes as l2_episodes
from .l2 import jobs as l2_jobs
from .l2 import review as l2_review
from .store.l1 import count_ingest, insert_events

VIEWER_SESSION = "magi-viewer"   # the session of what the user says through the memory viewer


# Events re-indexed per transaction by reindex() (~0.3 s each; issue 16: no long write holds others up).
REINDEX_CHUNK = 1000

class ReviewMixin:
    def beliefs(self, category: str = "assertions", *, state: str | None = None, entity: str | None = None,
                source: str | None = None, limit: int = 1000) -> list[l2_beliefs.Belief]:
        """What the memory believes: ``category`` assertions | facts | relationships; ``state`` current |
        history | denied (None: all); ``entity`` a name or alias in it; ``source`` of its evidence."""
        return l2_beliefs.list_beliefs(self.db.reader(), category, state=state, entity=entity, source=source,
                                       limit=limit)

    def belief(self, key: str) -> l2_beliefs.Belief | None:
        return l2_beliefs.get_belief(self.db.reader(), key)

    def evidence_trail(self, key: str) -> dict[str, Any] | None:
        """A belief, the L1 events behind it, what it replaced and what replaced it, the user's reviews."""
        return l2_beliefs.evidence_trail(self.db.reader(), key)

    def confirm(self, key: str) -> int:
        """The user says the belief is right: it becomes stable, user-confirmed. Returns the review id."""
        return self._review(lambda conn, now: l2_review.confirm(conn, key, now))

    def deny(self, key: str) -> int:
        """The user says the belief is wrong: it is deleted (user_denied) and the evidence already in
        memory can never bring it back. Returns the review id (for ``undo``)."""
        return self._review(lambda conn, now: l2_review.deny(conn, key, now))

    def correct(self, key: str, value: str) -> int:
        """The user gives the right value: stored as their own statement (an L1 event from the memory
        viewer) that the new belief cites, superseding the old one. Returns the review id."""
        belief = self.belief(key)
        if belief is None:
            raise l2_review.ReviewError(f"no belief {key!r}")
        now = time.time()
        event, _ = self._normalize({
            "source_type": "chat", "session_id": VIEWER_SESSION, "occurred_at": now,
            "chat": {"role": "user", "provenance": "human_input",
                     "text": l2_review.correction_text(belief, " ".join(str(value).split()))},
        }, now)
        try:
            with self.db.transaction() as conn:
                stored = insert_events(conn, [event])[0]
                self._entities.link(conn, [(stored.rowid, event)])
                count_ingest(conn, event.source, accepted=1, duplicates=0, now=now)
                review_id = l2_review.correct(conn, key, value, stored.rowid, now)
                l2_jobs.mark_done(conn, [stored.rowid], now)   # its belief is written; nothing to project
        except BaseException:
            self._entities.reset()
            raise
        self._notify()
        return review_id

    def undo(self, review_id: int) -> dict[str, Any]:
        """Take back a confirm, delete or correct (a correction's own event goes too)."""
        def run(conn, now):
            done = l2_review.review(conn, review_id)
            rowid = (done or {}).get("detail", {}).get("event_rowid")
            if done and done["action"] == "correct" and done["undone_at"] is None and rowid is not None:
                conn.execute("DELETE FROM fact_events WHERE id = ?", (rowid,))   # its chunks and vectors go too
                l2_episodes.upkeep(conn)
            return l2_review.undo(conn, review_id, now)
        return self._review(run)

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
        self._notify()
        return queued

    def reviews(self, limit: int = 100) -> list[dict[str, Any]]:
        """The user's latest reviews, newest first."""
        ids = [r[0] for r in self.db.reader().execute(
            "SELECT review_id FROM user_reviews ORDER BY review_id DESC LIMIT ?", (limit,))]
        return [l2_review.review(self.db.reader(), i) for i in ids]

    def entities(self, search: str | None = None, limit: int = 500) -> list[dict[str, Any]]:
        return l2_beliefs.list_entities(self.db.reader(), search, limit)

    def merge_entities(self, keep: int, drop: int) -> int:
        """The user says two entities are one: ``drop`` becomes an alias of ``keep`` (not undoable)."""
        review_id = self._review(lambda conn, now: l2_review.merge_entities(conn, keep, drop, now))
        self._entities.reset()
        return review_id

    def add_alias(self, entity_id: int, alias: str) -> None:
        self._review(lambda conn, now: l2_review.add_alias(conn, entity_id, alias, now))
        self._entities.reset()

    def activity_by_day(self, days: int = 14, now: float | None = None) -> dict[str, dict[str, int]]:
        """Stored events per source per local day, the last ``days`` days up to ``now``."""
        now = time.time() if now is None else now
        return l2_beliefs.activity_by_day(self.db.reader(), now - days * 86400, now)

    def _review(self, action: Callable[[Any, float], Any]) -> Any:
        with self.db.transaction() as conn:
            return action(conn, time.time())
