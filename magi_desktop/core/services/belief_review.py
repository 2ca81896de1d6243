"""The user's review (architecture §11): what the memory believes, the evidence behind it, and the user's
confirm / correct / delete / undo, entities, aliases and merges."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..l2 import beliefs as l2_beliefs
from ..l2 import episodes as l2_episodes
from ..l2 import jobs as l2_jobs
from ..l2 import review as l2_review
from ..store import Database
from ..store.connection import Connection
from ..store.entities import EntityLinker
from ..store.l1 import count_ingest, delete_event, insert_events
from ..store.reviews import latest_review_ids
from .normalizer import Normalizer

VIEWER_SESSION = "magi-viewer"   # the session of what the user says through the memory viewer


class BeliefReview:
    def __init__(self, db: Database, linker: EntityLinker, normalize: Normalizer, notify: Callable[[], None]) -> None:
        self.db = db
        self.linker = linker
        self.normalize = normalize
        self.notify = notify     # a correction is a new event: the background work embeds it

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
        event, _ = self.normalize({
            "source_type": "chat", "session_id": VIEWER_SESSION, "occurred_at": now,
            "chat": {"role": "user", "provenance": "human_input",
                     "text": l2_review.correction_text(belief, " ".join(str(value).split()))},
        }, now)
        try:
            with self.db.transaction() as conn:
                rowid = insert_events(conn, [event])[0].rowid
                if rowid is None:       # a correction's event is new (its own timestamp and text)
                    raise RuntimeError("the correction's event was not stored")
                self.linker.link(conn, [(rowid, event)])
                count_ingest(conn, event.source, accepted=1, duplicates=0, now=now)
                review_id = l2_review.correct(conn, key, value, rowid, now)
                l2_jobs.mark_done(conn, [rowid], now)   # its belief is written; nothing to project
        except BaseException:
            self.linker.reset()
            raise
        self.notify()
        return review_id

    def undo(self, review_id: int) -> dict[str, Any]:
        """Take back a confirm, delete or correct (a correction's own event goes too)."""
        def run(conn: Connection, now: float) -> dict[str, Any]:
            done = l2_review.review(conn, review_id)
            rowid = (done or {}).get("detail", {}).get("event_rowid")
            if done and done["action"] == "correct" and done["undone_at"] is None and rowid is not None:
                delete_event(conn, rowid)   # its chunks and vectors go too
                l2_episodes.upkeep(conn)
            return l2_review.undo(conn, review_id, now)
        return self._review(run)

    def reviews(self, limit: int = 100) -> list[dict[str, Any]]:
        """The user's latest reviews, newest first."""
        ids = latest_review_ids(self.db.reader(), limit)
        # Reviews are never deleted, so each id just read has its review.
        return [review for i in ids if (review := l2_review.review(self.db.reader(), i)) is not None]

    def entities(self, search: str | None = None, limit: int = 500) -> list[dict[str, Any]]:
        return l2_beliefs.list_entities(self.db.reader(), search, limit)

    def merge_entities(self, keep: int, drop: int) -> int:
        """The user says two entities are one: ``drop`` becomes an alias of ``keep`` (not undoable)."""
        review_id = self._review(lambda conn, now: l2_review.merge_entities(conn, keep, drop, now))
        self.linker.reset()
        return review_id

    def add_alias(self, entity_id: int, alias: str) -> None:
        self._review(lambda conn, now: l2_review.add_alias(conn, entity_id, alias, now))
        self.linker.reset()

    def _review(self, action: Callable[[Connection, float], Any]) -> Any:
        with self.db.transaction() as conn:
            return action(conn, time.time())
