"""What the memory believes, as the user reviews it: assertions, facts and relationships,
each with the trail of L1 events behind it (architecture §11). Read-only.

A belief's key is ``assertion:<id>`` or ``edge:<triple id>``. Its ``state`` is what the
viewer filters on: ``current`` (live), ``history`` (replaced, lapsed or expired) or
``denied`` (the user deleted it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import InvalidInput
from ..store import beliefs as store
from ..store.connection import Connection
from ..store.entities import active_entities_by_mentions
from ..store.l1 import events_per_source_and_day
from ..store.reviews import reviews_of
from .graph import LIVE

CATEGORIES = ("assertions", "facts", "relationships")
STATES = ("current", "history", "denied")
# An edge whose object is one of these is a relationship between people, not a fact about one.
PEOPLE = ("person", "creator")


@dataclass
class Belief:
    """What the memory believes (``Memory.beliefs`` / ``Memory.belief``), as the review shows it.

    ``key`` (``kind:row``, what ``confirm`` / ``deny`` / ``correct`` take), ``category`` (assertions, facts or
    relationships), ``subject``, ``relation`` (the trait or predicate), ``value``, ``status`` as stored,
    ``state`` (``current``, ``history`` or ``denied``), ``confidence``, ``observations`` (how many events support
    it), ``first_observed_at`` / ``last_observed_at`` / ``confirmed_at`` (UNIX seconds), ``subject_id`` (the
    entity), ``sources`` (the sources of its evidence). ``to_dict()`` adds ``kind``.
    """

    key: str
    category: str               # assertions | facts | relationships
    subject: str
    relation: str               # the trait or predicate
    value: str                  # the trait's value or the edge's object
    status: str                 # as stored (tentative, stable, active, superseded, user_denied…)
    state: str                  # current | history | denied
    confidence: float
    observations: int
    first_observed_at: float
    last_observed_at: float
    confirmed_at: float | None
    subject_id: int
    sources: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.key.split(":", 1)[0]

    @property
    def row_key(self) -> str:
        return self.key.split(":", 1)[1]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"kind": self.kind}


def _assertion_state(status: str) -> str:
    return "current" if status in LIVE else "denied" if status == "user_denied" else "history"


def _edge_state(status: str, reason: str | None) -> str:
    return "current" if status == "active" else "denied" if reason == "user_denied" else "history"


def _assertion(row) -> Belief:
    return Belief(row[0], "assertions", row[1], row[2], row[3], row[4], _assertion_state(row[4]), row[5], row[6],
                  row[7], row[8], row[9], row[10], sorted((row[11] or "").split(",")) if row[11] else [])


def _edge(row) -> Belief:
    category = "relationships" if row[13] in PEOPLE else "facts"
    return Belief(row[0], category, row[1], row[2], row[3], row[4], _edge_state(row[4], row[12]), row[5], row[6],
                  row[7], row[8], row[9], row[10], sorted((row[11] or "").split(",")) if row[11] else [])


def list_beliefs(conn: Connection, category: str = "assertions", *, state: str | None = None,
                 entity: str | None = None, source: str | None = None, limit: int = 1000) -> list[Belief]:
    """Beliefs of one category, newest first, filtered by state, by an entity's name (or alias,
    matched in subject or value) and by the source of their evidence."""
    if category not in CATEGORIES:
        raise InvalidInput(f"category must be one of {', '.join(CATEGORIES)}")
    if state is not None and state not in STATES:
        raise InvalidInput(f"state must be one of {', '.join(STATES)}")
    if category == "assertions":
        rows = store.belief_rows(conn, "assertion", LIVE, state=state, entity=entity, source=source, limit=limit)
        return [_assertion(row) for row in rows]
    rows = store.belief_rows(conn, "edge", LIVE, state=state, entity=entity, source=source, limit=limit,
                             object_types=PEOPLE, other_object_types=category != "relationships")
    return [_edge(row) for row in rows]


def get_belief(conn: Connection, key: str) -> Belief | None:
    kind, _, row_key = key.partition(":")
    if kind == "assertion":
        if not row_key.isdigit():
            return None
        row = store.belief_row(conn, "assertion", int(row_key))
        return _assertion(row) if row else None
    if kind == "edge":
        row = store.belief_row(conn, "edge", row_key)
        return _edge(row) if row else None
    return None


def evidence_trail(conn: Connection, key: str) -> dict[str, Any] | None:
    """A belief with the L1 events behind it, what it replaced, what replaced it and the user's reviews."""
    belief = get_belief(conn, key)
    if belief is None:
        return None
    events = [
        {"event_id": r[0], "timestamp": r[1], "source": r[2], "author": r[3], "evidence_class": r[4],
         "content": r[5], "source_item_id": r[6], "session_id": r[7]}
        for r in store.trail_events(conn, belief.kind, belief.row_key)]
    if belief.kind == "assertion":
        replaced = store.assertions_replaced_by(conn, int(belief.row_key))
        by: int | str | None = store.assertion_superseded_by(conn, int(belief.row_key))
        replaced_by = f"assertion:{by}" if by is not None else None
    else:
        replaced = store.edges_replaced_by(conn, belief.row_key)
        by = store.edge_superseded_by(conn, belief.row_key)
        replaced_by = f"edge:{by}" if by is not None else None
    reviews = [
        {"review_id": r[0], "action": r[1], "detail": json.loads(r[2]), "created_at": r[3], "undone_at": r[4]}
        for r in reviews_of(conn, belief.kind, belief.row_key)]
    return {
        "belief": belief,
        "events": events,
        "replaced": [b for b in (get_belief(conn, k) for k in dict.fromkeys(replaced)) if b is not None],
        "replaced_by": get_belief(conn, replaced_by) if replaced_by else None,
        "reviews": reviews,
    }


def list_entities(conn: Connection, search: str | None = None, limit: int = 500) -> list[dict[str, Any]]:
    """Active entities, most mentioned first: id, name, type, aliases, how many events mention them."""
    rows = active_entities_by_mentions(conn, search, limit)
    return [{"entity_id": r[0], "name": r[1], "entity_type": r[2], "aliases": json.loads(r[3]), "events": r[4]}
            for r in rows]


def activity_by_day(conn: Connection, since: float, until: float) -> dict[str, dict[str, int]]:
    """Stored events per source per local day ("YYYY-MM-DD") between two times."""
    out: dict[str, dict[str, int]] = {}
    for source, day, count in events_per_source_and_day(conn, since, until):
        out.setdefault(source, {})[day] = count
    return out
