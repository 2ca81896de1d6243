"""What the memory believes, as the user reviews it (``core/l2/beliefs.py``): assertions
(``tom_trait_assertions``) and edges (``kg_edges``) with their subject, value and the sources of their
evidence, filtered the way the viewer filters; and the trail behind one belief.

A belief row: (key, subject, relation, value, status, confidence, observations, first_observed_at,
last_observed_at, user_confirmed_at, subject_id, comma-separated sources), and for an edge also
(retired_reason, object's entity_type).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .connection import Connection

KINDS = ("assertion", "edge")

_SELECT = {
    "assertion": (
        "SELECT 'assertion:' || a.assertion_id, e.name, a.trait, a.value, a.status, a.confidence, a.observations, "
        "a.first_observed_at, a.last_observed_at, a.user_confirmed_at, a.entity_id, "
        "(SELECT group_concat(DISTINCT f.source) FROM l2_evidence v JOIN fact_events f ON f.id = v.event_rowid "
        " WHERE v.kind = 'assertion' AND v.row_key = CAST(a.assertion_id AS TEXT)) "
        "FROM tom_trait_assertions a JOIN entity_catalog e ON e.entity_id = a.entity_id"),
    "edge": (
        "SELECT 'edge:' || k.triple_id, s.name, k.predicate, o.name, k.status, k.confidence, k.observations, "
        "k.first_observed_at, k.last_observed_at, k.user_confirmed_at, k.subject_id, "
        "(SELECT group_concat(DISTINCT f.source) FROM l2_evidence v JOIN fact_events f ON f.id = v.event_rowid "
        " WHERE v.kind = 'edge' AND v.row_key = k.triple_id), k.retired_reason, o.entity_type "
        "FROM kg_edges k JOIN entity_catalog s ON s.entity_id = k.subject_id "
        "JOIN entity_catalog o ON o.entity_id = k.object_id"),
}
# The row_key of a belief in l2_evidence, as the query spells it.
_ROW_KEY = {"assertion": "CAST(a.assertion_id AS TEXT)", "edge": "k.triple_id"}
# A name (or alias) matched in the subject or the value: two parameters.
_NAMED = {
    "assertion": "(instr(lower(e.name || ' ' || e.aliases_json), lower(?)) > 0 OR instr(lower(a.value), "
                 "lower(?)) > 0)",
    "edge": "(instr(lower(s.name || ' ' || s.aliases_json), lower(?)) > 0 "
            "OR instr(lower(o.name || ' ' || o.aliases_json), lower(?)) > 0)",
}
_ORDER = {"assertion": "a.last_observed_at DESC, a.assertion_id DESC", "edge": "k.last_observed_at DESC, k.triple_id"}
_BY_KEY = {"assertion": "a.assertion_id = ?", "edge": "k.triple_id = ?"}


def _in_state(kind: str, state: str, live: Sequence[str]) -> str:
    """SQL true when a belief of ``kind`` is in ``state`` (current, denied, history); ``live``: an assertion's
    statuses that hold."""
    if kind == "assertion":
        return {"current": f"a.status IN {tuple(live)}", "denied": "a.status = 'user_denied'",
                "history": f"a.status NOT IN {tuple(live)} AND a.status != 'user_denied'"}[state]
    return {"current": "k.status = 'active'", "denied": "k.retired_reason = 'user_denied'",
            "history": "k.status != 'active' AND coalesce(k.retired_reason, '') != 'user_denied'"}[state]


def belief_rows(conn: Connection, kind: str, live: Sequence[str], *, state: str | None, entity: str | None,
                source: str | None, limit: int, object_types: Sequence[str] = (),
                other_object_types: bool = False) -> list[tuple[Any, ...]]:
    """Belief rows of ``kind`` ('assertion' or 'edge'), newest first: in ``state`` (None: any), naming
    ``entity`` in subject or value, with evidence from ``source``; an edge's object of one of ``object_types``
    (or, with ``other_object_types``, of none of them)."""
    where: list[str] = []
    args: list[Any] = []
    if object_types:
        types = ", ".join(f"'{t}'" for t in object_types)
        where.append(f"o.entity_type {'NOT IN' if other_object_types else 'IN'} ({types})")
    if state is not None:
        where.append(_in_state(kind, state, live))
    if entity:
        where.append(_NAMED[kind])
        args += [entity, entity]
    if source:
        where.append("EXISTS (SELECT 1 FROM l2_evidence v JOIN fact_events f ON f.id = v.event_rowid "
                     f"WHERE v.kind = '{kind}' AND v.row_key = {_ROW_KEY[kind]} AND f.source = ?)")
        args.append(source)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    return conn.execute(f"{_SELECT[kind]}{clause} ORDER BY {_ORDER[kind]} LIMIT ?", [*args, limit]).fetchall()


def belief_row(conn: Connection, kind: str, row_key: str | int) -> tuple[Any, ...] | None:
    """The belief row of one assertion (by its id) or edge (by its triple id)."""
    return conn.execute(f"{_SELECT[kind]} WHERE {_BY_KEY[kind]}", (row_key,)).fetchone()


def trail_events(conn: Connection, kind: str, row_key: str) -> list[tuple[Any, ...]]:
    """(event_id, timestamp, source, author_type, evidence_class, content, source_item_id, session_id) of the
    events behind a belief, in time order."""
    return conn.execute(
        "SELECT f.event_id, f.timestamp, f.source, f.author_type, f.evidence_class, f.content, f.source_item_id, "
        "f.session_id FROM l2_evidence v JOIN fact_events f ON f.id = v.event_rowid "
        "WHERE v.kind = ? AND v.row_key = ? ORDER BY f.timestamp, f.id", (kind, row_key)).fetchall()


def assertions_replaced_by(conn: Connection, assertion_id: int) -> list[str]:
    """The keys ('assertion:<id>') of the assertions this one superseded or replaced."""
    return [r[0] for r in conn.execute(
        "SELECT 'assertion:' || assertion_id FROM tom_trait_assertions WHERE superseded_by = ? "
        "UNION SELECT 'assertion:' || replaces FROM tom_trait_assertions WHERE assertion_id = ? "
        "AND replaces IS NOT NULL", (assertion_id, assertion_id))]


def assertion_superseded_by(conn: Connection, assertion_id: int) -> int | None:
    return conn.execute("SELECT superseded_by FROM tom_trait_assertions WHERE assertion_id = ?",
                        (assertion_id,)).fetchone()[0]


def edges_replaced_by(conn: Connection, triple_id: str) -> list[str]:
    """The keys ('edge:<triple id>') of the edges this one superseded."""
    return [r[0] for r in conn.execute(
        "SELECT 'edge:' || triple_id FROM kg_edges WHERE superseded_by = ?", (triple_id,))]


def edge_superseded_by(conn: Connection, triple_id: str) -> str | None:
    return conn.execute("SELECT superseded_by FROM kg_edges WHERE triple_id = ?", (triple_id,)).fetchone()[0]
