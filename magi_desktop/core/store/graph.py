"""The L2 knowledge graph's edges (``kg_edges``) and the evidence rows that tie them to events
(``l2_evidence``): the reads recall makes. The L2 worker's writes are still in ``core/l2`` (issue 18, item 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .connection import Connection

# readers the tests and layers share

class NamedEdge(NamedTuple):
    """An edge with its ends' names, and what replaced it."""

    subject: str
    predicate: str
    object: str
    status: str
    confidence: float
    observations: int
    triple_id: str
    superseded_by: str | None


def named_edges(conn: Connection, status: str | None = None) -> list[NamedEdge]:
    """Every edge (or those of one ``status``) with its subject's and object's names."""
    sql = ("SELECT s.name, k.predicate, o.name, k.status, k.confidence, k.observations, k.triple_id, k.superseded_by "
           "FROM kg_edges k JOIN entity_catalog s ON s.entity_id = k.subject_id "
           "JOIN entity_catalog o ON o.entity_id = k.object_id")
    rows = conn.execute(sql + (" WHERE k.status = ?" if status else ""), (status,) if status else ())
    return [NamedEdge(*row) for row in rows]


def triple_ids(conn: Connection) -> list[str]:
    """The triple id of every edge, whatever its status."""
    return [r[0] for r in conn.execute("SELECT triple_id FROM kg_edges")]


def edge_strengths(conn: Connection, predicates: Sequence[str]) -> dict[str, float]:
    """predicate → strength of the edges of these predicates (the last edge of a predicate wins)."""
    marks = ", ".join("?" * len(predicates))
    return dict(conn.execute(f"SELECT predicate, strength FROM kg_edges WHERE predicate IN ({marks})",
                             list(predicates)).fetchall())


def edge_currency_by_event(conn: Connection, event_ids: Sequence[str], subject_ids: Sequence[int],
                           predicates: Sequence[str], now: float) -> list[tuple[str, int]]:
    """(event_id, 1 if current else 0) for each of these events that supports an edge of these subjects and
    predicates known by ``now`` (current: the edge is active, or was retired after ``now``); edges the user
    denied do not count."""
    marks = ", ".join("?" * len(event_ids))
    subjects = ", ".join("?" * len(subject_ids))
    kinds = ", ".join("?" * len(predicates))
    return conn.execute(
        "SELECT e.event_id, max(k.status = 'active' OR coalesce(k.retired_at > ?, 0)) FROM l2_evidence v "
        "JOIN fact_events e ON e.id = v.event_rowid JOIN kg_edges k ON v.kind = 'edge' AND v.row_key = k.triple_id "
        f"WHERE e.event_id IN ({marks}) AND k.subject_id IN ({subjects}) AND k.predicate IN ({kinds}) "
        "AND k.first_observed_at <= ? AND coalesce(k.retired_reason, '') != 'user_denied' GROUP BY e.event_id",
        [now, *event_ids, *subject_ids, *predicates, now]).fetchall()


def edge_predicate(conn: Connection, triple_id: str) -> str | None:
    """The predicate of an edge, or None when it is gone."""
    row = conn.execute("SELECT predicate FROM kg_edges WHERE triple_id = ?", (triple_id,)).fetchone()
    return row[0] if row else None


def edge_neighbours(conn: Connection, entity_ids: Sequence[int], now: float, limit: int) -> list[tuple[int, float]]:
    """(entity at the other end, its strongest edge's confidence) of the edges touching these entities that are
    known by ``now`` and current then (active, or retired later by anything but the user's denial), strongest
    first."""
    marks = ", ".join("?" * len(entity_ids))
    return conn.execute(
        "SELECT CASE WHEN subject_id IN ({m}) THEN object_id ELSE subject_id END AS other, max(confidence) "
        "FROM kg_edges WHERE (subject_id IN ({m}) OR object_id IN ({m})) AND first_observed_at <= ? "
        "AND (status = 'active' OR (retired_at > ? AND coalesce(retired_reason, '') != 'user_denied')) "
        "GROUP BY other ORDER BY 2 DESC LIMIT {n}".format(m=marks, n=int(limit)),
        [*entity_ids, *entity_ids, *entity_ids, now, now]).fetchall()


# What an edge finding shows (``core/retrieval/structured.py``), over ``kg_edges k`` and its two ends.
_EDGE_COLUMNS = ("k.triple_id, s.name, k.predicate, o.name, k.status, k.confidence, k.observations, "
                 "k.first_observed_at, k.last_observed_at, k.retired_at, k.superseded_by, k.object_id")
_EDGE_JOINS = ("FROM kg_edges k JOIN entity_catalog s ON s.entity_id = k.subject_id "
               "JOIN entity_catalog o ON o.entity_id = k.object_id")


def edges_with_predicates(conn: Connection, subject_ids: Sequence[int], predicates: Sequence[str], now: float,
                          limit: int) -> list[tuple[Any, ...]]:
    """Edge rows (triple_id, subject, predicate, object, status, confidence, observations, first_observed_at,
    last_observed_at, retired_at, superseded_by, object_id) of these subjects and predicates known by ``now``,
    HAS_STATE aside; most confident first."""
    subjects = ", ".join("?" * len(subject_ids))
    marks = ", ".join("?" * len(predicates))
    return conn.execute(
        f"SELECT {_EDGE_COLUMNS} {_EDGE_JOINS} WHERE k.subject_id IN ({subjects}) AND k.predicate IN ({marks}) "
        "AND k.predicate != 'HAS_STATE' "
        "AND k.first_observed_at <= ? ORDER BY k.confidence DESC LIMIT ?",
        [*subject_ids, *predicates, now, limit]).fetchall()


def edges_by_rowid(conn: Connection, rowids: Sequence[int], subject_ids: Sequence[int],
                   now: float) -> list[tuple[Any, ...]]:
    """Edge rows (as :func:`edges_with_predicates`, then the edge's rowid) of these rowids and subjects known by
    ``now``, HAS_STATE aside."""
    subjects = ", ".join("?" * len(subject_ids))
    marks = ", ".join("?" * len(rowids))
    return conn.execute(
        f"SELECT {_EDGE_COLUMNS}, k.rowid {_EDGE_JOINS} WHERE k.rowid IN ({marks}) "
        f"AND k.subject_id IN ({subjects}) AND k.predicate != 'HAS_STATE' AND k.first_observed_at <= ?",
        [*rowids, *subject_ids, now]).fetchall()


def edges_to_objects_like(conn: Connection, subject_ids: Sequence[int], patterns: Sequence[str], now: float,
                          limit: int) -> list[tuple[Any, ...]]:
    """Edge rows (as :func:`edges_with_predicates`) of these subjects whose object's name key is LIKE one of
    ``patterns``, known by ``now``, HAS_STATE aside; most confident first."""
    subjects = ", ".join("?" * len(subject_ids))
    likes = " OR ".join("o.name_key LIKE ?" for _ in patterns)
    return conn.execute(
        f"SELECT {_EDGE_COLUMNS} {_EDGE_JOINS} WHERE k.subject_id IN ({subjects}) AND ({likes}) "
        "AND k.predicate != 'HAS_STATE' "
        "AND k.first_observed_at <= ? ORDER BY k.confidence DESC LIMIT ?",
        [*subject_ids, *patterns, now, limit]).fetchall()


def edges_touching(conn: Connection, side: str, entity_ids: Sequence[int], not_subjects: Sequence[int], now: float,
                   limit: int) -> list[tuple[Any, ...]]:
    """Edge rows (as :func:`edges_with_predicates`) whose ``side`` ('object_id' or 'subject_id') is one of these
    entities and whose subject is none of ``not_subjects``, known by ``now``."""
    if side not in ("object_id", "subject_id"):
        raise ValueError(f"not a side of an edge: {side!r}")
    marks = ", ".join("?" * len(entity_ids))
    subjects = ", ".join("?" * len(not_subjects))
    return conn.execute(
        f"SELECT {_EDGE_COLUMNS} {_EDGE_JOINS} WHERE k.{side} IN ({marks}) "
        f"AND k.subject_id NOT IN ({subjects}) AND k.first_observed_at <= ? LIMIT ?",
        [*entity_ids, *not_subjects, now, limit]).fetchall()


def edge_object_name(conn: Connection, triple_id: str) -> str | None:
    """The name of an edge's object, or None when the edge is gone."""
    row = conn.execute("SELECT o.name FROM kg_edges k JOIN entity_catalog o ON o.entity_id = k.object_id "
                       "WHERE k.triple_id = ?", (triple_id,)).fetchone()
    return row[0] if row else None


def denied_edges(conn: Connection) -> set[str]:
    """The denial keys of the edges the user deleted (``user_denials``)."""
    return {r[0] for r in conn.execute("SELECT denial_key FROM user_denials WHERE kind = 'edge'")}
