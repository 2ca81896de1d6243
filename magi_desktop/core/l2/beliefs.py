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
from ..store.connection import Connection
from .graph import LIVE

CATEGORIES = ("assertions", "facts", "relationships")
STATES = ("current", "history", "denied")
# An edge whose object is one of these is a relationship between people, not a fact about one.
PEOPLE = ("person", "creator")


@dataclass
class Belief:
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


_ASSERTIONS = (
    "SELECT 'assertion:' || a.assertion_id, e.name, a.trait, a.value, a.status, a.confidence, a.observations, "
    "a.first_observed_at, a.last_observed_at, a.user_confirmed_at, a.entity_id, "
    "(SELECT group_concat(DISTINCT f.source) FROM l2_evidence v JOIN fact_events f ON f.id = v.event_rowid "
    " WHERE v.kind = 'assertion' AND v.row_key = CAST(a.assertion_id AS TEXT)) "
    "FROM tom_trait_assertions a JOIN entity_catalog e ON e.entity_id = a.entity_id")
_EDGES = (
    "SELECT 'edge:' || k.triple_id, s.name, k.predicate, o.name, k.status, k.confidence, k.observations, "
    "k.first_observed_at, k.last_observed_at, k.user_confirmed_at, k.subject_id, "
    "(SELECT group_concat(DISTINCT f.source) FROM l2_evidence v JOIN fact_events f ON f.id = v.event_rowid "
    " WHERE v.kind = 'edge' AND v.row_key = k.triple_id), k.retired_reason, o.entity_type "
    "FROM kg_edges k JOIN entity_catalog s ON s.entity_id = k.subject_id "
    "JOIN entity_catalog o ON o.entity_id = k.object_id")


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
    where, args = [], []
    if category == "assertions":
        sql = _ASSERTIONS
        if state == "current":
            where.append(f"a.status IN {LIVE}")
        elif state == "denied":
            where.append("a.status = 'user_denied'")
        elif state == "history":
            where.append(f"a.status NOT IN {LIVE} AND a.status != 'user_denied'")
        if entity:
            where.append("(instr(lower(e.name || ' ' || e.aliases_json), lower(?)) > 0 OR instr(lower(a.value), "
                         "lower(?)) > 0)")
            args += [entity, entity]
        if source:
            where.append("EXISTS (SELECT 1 FROM l2_evidence v JOIN fact_events f ON f.id = v.event_rowid "
                         "WHERE v.kind = 'assertion' AND v.row_key = CAST(a.assertion_id AS TEXT) AND f.source = ?)")
            args.append(source)
        order = "a.last_observed_at DESC, a.assertion_id DESC"
        make = _assertion
    else:
        sql = _EDGES
        people = ", ".join(f"'{p}'" for p in PEOPLE)
        where.append(f"o.entity_type {'IN' if category == 'relationships' else 'NOT IN'} ({people})")
        if state == "current":
            where.append("k.status = 'active'")
        elif state == "denied":
            where.append("k.retired_reason = 'user_denied'")
        elif state == "history":
            where.append("k.status != 'active' AND coalesce(k.retired_reason, '') != 'user_denied'")
        if entity:
            where.append("(instr(lower(s.name || ' ' || s.aliases_json), lower(?)) > 0 "
                         "OR instr(lower(o.name || ' ' || o.aliases_json), lower(?)) > 0)")
            args += [entity, entity]
        if source:
            where.append("EXISTS (SELECT 1 FROM l2_evidence v JOIN fact_events f ON f.id = v.event_rowid "
                         "WHERE v.kind = 'edge' AND v.row_key = k.triple_id AND f.source = ?)")
            args.append(source)
        order = "k.last_observed_at DESC, k.triple_id"
        make = _edge
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    rows = conn.execute(f"{sql}{clause} ORDER BY {order} LIMIT ?", [*args, limit]).fetchall()
    return [make(row) for row in rows]


def get_belief(conn: Connection, key: str) -> Belief | None:
    kind, _, row_key = key.partition(":")
    if kind == "assertion":
        if not row_key.isdigit():
            return None
        row = conn.execute(f"{_ASSERTIONS} WHERE a.assertion_id = ?", (int(row_key),)).fetchone()
        return _assertion(row) if row else None
    if kind == "edge":
        row = conn.execute(f"{_EDGES} WHERE k.triple_id = ?", (row_key,)).fetchone()
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
        for r in conn.execute(
            "SELECT f.event_id, f.timestamp, f.source, f.author_type, f.evidence_class, f.content, f.source_item_id, "
            "f.session_id FROM l2_evidence v JOIN fact_events f ON f.id = v.event_rowid "
            "WHERE v.kind = ? AND v.row_key = ? ORDER BY f.timestamp, f.id", (belief.kind, belief.row_key))]
    if belief.kind == "assertion":
        replaced = [r[0] for r in conn.execute(
            "SELECT 'assertion:' || assertion_id FROM tom_trait_assertions WHERE superseded_by = ? "
            "UNION SELECT 'assertion:' || replaces FROM tom_trait_assertions WHERE assertion_id = ? "
            "AND replaces IS NOT NULL", (int(belief.row_key), int(belief.row_key)))]
        by = conn.execute("SELECT superseded_by FROM tom_trait_assertions WHERE assertion_id = ?",
                          (int(belief.row_key),)).fetchone()[0]
        replaced_by = f"assertion:{by}" if by is not None else None
    else:
        replaced = [r[0] for r in conn.execute(
            "SELECT 'edge:' || triple_id FROM kg_edges WHERE superseded_by = ?", (belief.row_key,))]
        by = conn.execute("SELECT superseded_by FROM kg_edges WHERE triple_id = ?", (belief.row_key,)).fetchone()[0]
        replaced_by = f"edge:{by}" if by is not None else None
    reviews = [
        {"review_id": r[0], "action": r[1], "detail": json.loads(r[2]), "created_at": r[3], "undone_at": r[4]}
        for r in conn.execute("SELECT review_id, action, detail_json, created_at, undone_at FROM user_reviews "
                              "WHERE kind = ? AND row_key = ? ORDER BY review_id", (belief.kind, belief.row_key))]
    return {
        "belief": belief,
        "events": events,
        "replaced": [b for b in (get_belief(conn, k) for k in dict.fromkeys(replaced)) if b is not None],
        "replaced_by": get_belief(conn, replaced_by) if replaced_by else None,
        "reviews": reviews,
    }


def list_entities(conn: Connection, search: str | None = None, limit: int = 500) -> list[dict[str, Any]]:
    """Active entities, most mentioned first: id, name, type, aliases, how many events mention them."""
    where, args = "WHERE c.status = 'active'", []
    if search:
        where += " AND instr(lower(c.name || ' ' || c.aliases_json), lower(?)) > 0"
        args.append(search)
    rows = conn.execute(
        "SELECT c.entity_id, c.name, c.entity_type, c.aliases_json, "
        "(SELECT count(*) FROM l1_event_entities l WHERE l.entity_id = c.entity_id) AS mentions "
        f"FROM entity_catalog c {where} ORDER BY mentions DESC, c.name LIMIT ?", [*args, limit]).fetchall()
    return [{"entity_id": r[0], "name": r[1], "entity_type": r[2], "aliases": json.loads(r[3]), "events": r[4]}
            for r in rows]


def activity_by_day(conn: Connection, since: float, until: float) -> dict[str, dict[str, int]]:
    """Stored events per source per local day ("YYYY-MM-DD") between two times."""
    out: dict[str, dict[str, int]] = {}
    for source, day, count in conn.execute(
            "SELECT source, date(timestamp, 'unixepoch', 'localtime') AS day, count(*) FROM fact_events "
            "WHERE timestamp >= ? AND timestamp < ? GROUP BY source, day ORDER BY day", (since, until)):
        out.setdefault(source, {})[day] = count
    return out
