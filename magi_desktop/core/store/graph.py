"""The L2 knowledge graph's edges (``kg_edges``) and the evidence rows that tie them to events
(``l2_evidence``): the reads recall makes. The L2 worker's writes are still in ``core/l2`` (issue 18, item 2)."""

from __future__ import annotations

from collections.abc import Sequence

from .connection import Connection


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
