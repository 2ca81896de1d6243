"""The L2 knowledge graph's edges (``kg_edges``) and the evidence rows that tie them to events
(``l2_evidence``): the reads recall makes, then the L2 worker's writes and the reads they make (``core/l2``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .connection import Connection, placeholders

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
    marks = placeholders(len(predicates))
    return dict(conn.execute(f"SELECT predicate, strength FROM kg_edges WHERE predicate IN ({marks})",
                             list(predicates)).fetchall())


def edge_currency_by_event(conn: Connection, event_ids: Sequence[str], subject_ids: Sequence[int],
                           predicates: Sequence[str], now: float) -> list[tuple[str, int]]:
    """(event_id, 1 if current else 0) for each of these events that supports an edge of these subjects and
    predicates known by ``now`` (current: the edge is active, or was retired after ``now``); edges the user
    denied do not count."""
    marks = placeholders(len(event_ids))
    subjects = placeholders(len(subject_ids))
    kinds = placeholders(len(predicates))
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
    marks = placeholders(len(entity_ids))
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
    subjects = placeholders(len(subject_ids))
    marks = placeholders(len(predicates))
    return conn.execute(
        f"SELECT {_EDGE_COLUMNS} {_EDGE_JOINS} WHERE k.subject_id IN ({subjects}) AND k.predicate IN ({marks}) "
        "AND k.predicate != 'HAS_STATE' "
        "AND k.first_observed_at <= ? ORDER BY k.confidence DESC LIMIT ?",
        [*subject_ids, *predicates, now, limit]).fetchall()


def edges_by_rowid(conn: Connection, rowids: Sequence[int], subject_ids: Sequence[int],
                   now: float) -> list[tuple[Any, ...]]:
    """Edge rows (as :func:`edges_with_predicates`, then the edge's rowid) of these rowids and subjects known by
    ``now``, HAS_STATE aside."""
    subjects = placeholders(len(subject_ids))
    marks = placeholders(len(rowids))
    return conn.execute(
        f"SELECT {_EDGE_COLUMNS}, k.rowid {_EDGE_JOINS} WHERE k.rowid IN ({marks}) "
        f"AND k.subject_id IN ({subjects}) AND k.predicate != 'HAS_STATE' AND k.first_observed_at <= ?",
        [*rowids, *subject_ids, now]).fetchall()


def edges_to_objects_like(conn: Connection, subject_ids: Sequence[int], patterns: Sequence[str], now: float,
                          limit: int) -> list[tuple[Any, ...]]:
    """Edge rows (as :func:`edges_with_predicates`) of these subjects whose object's name key is LIKE one of
    ``patterns``, known by ``now``, HAS_STATE aside; most confident first."""
    subjects = placeholders(len(subject_ids))
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
    marks = placeholders(len(entity_ids))
    subjects = placeholders(len(not_subjects))
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


# --- the L2 worker's writes and the reads they make (core/l2) -------------------------------------------------

def active_edges_observed_before(conn: Connection, subject_id: int, predicate: str,
                                 before: float) -> list[tuple[str, str]]:
    """(triple_id, object's name key) of a subject's active edges of a predicate last observed before ``before``."""
    return conn.execute(
        "SELECT k.triple_id, c.name_key FROM kg_edges k JOIN entity_catalog c ON c.entity_id = k.object_id "
        "WHERE k.subject_id = ? AND k.predicate = ? AND k.status = 'active' AND k.last_observed_at < ?",
        (subject_id, predicate, before)).fetchall()


def has_newer_active_edge(conn: Connection, subject_id: int, predicate: str, other_than: str, after: float) -> bool:
    """Whether another active edge of the subject and predicate was last observed after ``after``."""
    return conn.execute(
        "SELECT 1 FROM kg_edges WHERE subject_id = ? AND predicate = ? AND status = 'active' "
        "AND triple_id != ? AND last_observed_at > ?",
        (subject_id, predicate, other_than, after)).fetchone() is not None


def mark_evolved(conn: Connection, triple_id: str) -> None:
    """An edge becomes history of the newer value that replaced it."""
    conn.execute("UPDATE kg_edges SET retired_reason = 'evolved', status = 'superseded' WHERE triple_id = ?",
                 (triple_id,))


def reactivate_edge(conn: Connection, triple_id: str) -> None:
    """A retired edge is current again."""
    conn.execute("UPDATE kg_edges SET status = 'active', retired_at = NULL, retired_reason = NULL "
                 "WHERE triple_id = ?", (triple_id,))


def active_predicate_between(conn: Connection, subject_id: int, object_id: int,
                             predicates: Sequence[str]) -> str | None:
    """The first observed of these predicates an active edge between the pair uses, if any."""
    row = conn.execute(f"SELECT predicate FROM kg_edges WHERE subject_id = ? AND object_id = ? AND status = 'active' "
                       f"AND predicate IN ({placeholders(len(predicates))}) ORDER BY first_observed_at LIMIT 1",
                       (subject_id, object_id, *predicates)).fetchone()
    return row[0] if row else None


def edge_state(conn: Connection, triple_id: str) -> tuple[float, str, float | None] | None:
    """(confidence, status, retired_at) of an edge, or None when there is none."""
    return conn.execute("SELECT confidence, status, retired_at FROM kg_edges WHERE triple_id = ?",
                        (triple_id,)).fetchone()


def add_edge(conn: Connection, triple_id: str, subject_id: int, predicate: str, object_id: int, confidence: float,
             observed_at: float, strength: float | None, edge_text: str) -> None:
    conn.execute(
        "INSERT INTO kg_edges (triple_id, subject_id, predicate, object_id, confidence, first_observed_at, "
        "last_observed_at, strength, edge_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (triple_id, subject_id, predicate, object_id, confidence, observed_at, observed_at, strength, edge_text))


def observe_edge_again(conn: Connection, triple_id: str, confidence: float, observed_at: float,
                       strength: float | None) -> None:
    """One more observation of an edge: its new confidence, its span stretched, the stronger strength kept."""
    conn.execute(
        "UPDATE kg_edges SET observations = observations + 1, confidence = ?, "
        "first_observed_at = min(first_observed_at, ?), last_observed_at = max(last_observed_at, ?), "
        "strength = CASE WHEN ? IS NULL THEN strength ELSE max(coalesce(strength, 0), ?) END WHERE triple_id = ?",
        (confidence, observed_at, observed_at, strength, strength, triple_id))


def revive_edge(conn: Connection, triple_id: str, observed_at: float) -> None:
    """An edge observed again after it was replaced is current once more."""
    conn.execute("UPDATE kg_edges SET status = 'active', superseded_by = NULL, retired_at = NULL, "
                 "retired_reason = NULL, last_observed_at = max(last_observed_at, ?) WHERE triple_id = ?",
                 (observed_at, triple_id))


def retire_edge(conn: Connection, tid: str, *, replaced_by: str | None, reason: str, now: float) -> None:
    """Retire a live edge: superseded by ``replaced_by`` when it evolved, else retired (an antonym, an ending)."""
    status = "superseded" if reason == "evolved" else "retired"
    conn.execute("UPDATE kg_edges SET status = ?, superseded_by = ?, retired_at = ?, retired_reason = ? "
                 "WHERE triple_id = ? AND status = 'active'", (status, replaced_by, now, reason, tid))


def edge_for_rewrite(conn: Connection, triple_id: str) -> tuple[Any, ...]:
    """(confidence, observations, first_observed_at, last_observed_at, status, edge_text, retired_at,
    retired_reason) of an edge."""
    return conn.execute("SELECT confidence, observations, first_observed_at, last_observed_at, status, edge_text, "
                        "retired_at, retired_reason FROM kg_edges WHERE triple_id = ?", (triple_id,)).fetchone()


def add_rewritten_edge(conn: Connection, triple_id: str, subject_id: int, predicate: str, object_id: int,
                       old: Sequence[Any], edge_text: str) -> None:
    """A new edge carrying an old one's state (``old``: as :func:`edge_for_rewrite` reads it)."""
    conn.execute(
        "INSERT INTO kg_edges (triple_id, subject_id, predicate, object_id, status, confidence, observations, "
        "first_observed_at, last_observed_at, edge_text, retired_at, retired_reason) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (triple_id, subject_id, predicate, object_id, old[4], old[0], old[1], old[2], old[3], edge_text, old[6],
         old[7]))


def absorb_edge_counts(conn: Connection, triple_id: str, confidence: float, observations: int, first: float,
                       last: float) -> None:
    """An edge takes in another's observations and span, at a new confidence."""
    conn.execute("UPDATE kg_edges SET confidence = ?, observations = observations + ?, "
                 "first_observed_at = min(first_observed_at, ?), last_observed_at = max(last_observed_at, ?) "
                 "WHERE triple_id = ?", (confidence, observations, first, last, triple_id))


def recount_observations(conn: Connection, triple_id: str) -> None:
    """An edge's observations are its evidence events (one event behind two merged halves counts once)."""
    conn.execute("UPDATE kg_edges SET observations = (SELECT count(*) FROM l2_evidence WHERE kind = 'edge' "
                 "AND row_key = ?) WHERE triple_id = ?", (triple_id, triple_id))


def repoint_superseded_by(conn: Connection, old_tid: str, new_tid: str) -> None:
    conn.execute("UPDATE kg_edges SET superseded_by = ? WHERE superseded_by = ?", (new_tid, old_tid))


def delete_edge(conn: Connection, triple_id: str) -> None:
    """An edge and its evidence rows go."""
    conn.execute("DELETE FROM kg_edges WHERE triple_id = ?", (triple_id,))
    conn.execute("DELETE FROM l2_evidence WHERE kind = 'edge' AND row_key = ?", (triple_id,))


def edges_of_merged_entities(conn: Connection) -> list[tuple[str, int, int, str, int, int]]:
    """(triple_id, subject_id, subject after merges, predicate, object_id, object after merges) of the edges with
    an end that was merged into another entity."""
    return conn.execute(
        "SELECT k.triple_id, k.subject_id, coalesce(s.merged_into, k.subject_id), k.predicate, k.object_id, "
        "coalesce(o.merged_into, k.object_id) FROM kg_edges k JOIN entity_catalog s ON s.entity_id = k.subject_id "
        "JOIN entity_catalog o ON o.entity_id = k.object_id "
        "WHERE s.status = 'merged' OR o.status = 'merged'").fetchall()


def edges_with_other_predicates(conn: Connection, predicates: Sequence[str]) -> list[tuple[str, int, str, int]]:
    """(triple_id, subject_id, predicate, object_id) of the edges whose predicate is none of these."""
    return conn.execute(
        f"SELECT triple_id, subject_id, predicate, object_id FROM kg_edges "
        f"WHERE predicate NOT IN ({placeholders(len(predicates))})", predicates).fetchall()


def edge_ends(conn: Connection, triple_id: str) -> tuple[int, str, str]:
    """(subject_id, predicate, object's entity_type) of an edge."""
    return conn.execute(
        "SELECT k.subject_id, k.predicate, o.entity_type FROM kg_edges k JOIN entity_catalog o "
        "ON o.entity_id = k.object_id WHERE k.triple_id = ?", (triple_id,)).fetchone()


def confirm_as_stated(conn: Connection, triple_id: str, now: float, confidence: float) -> None:
    """The user's own statement: confirmed now, at ``confidence``."""
    conn.execute("UPDATE kg_edges SET user_confirmed_at = ?, confidence = ? WHERE triple_id = ?",
                 (now, confidence, triple_id))


def supersede_corrected(conn: Connection, triple_id: str, by: str, now: float) -> None:
    """A corrected edge is superseded by the correction."""
    conn.execute("UPDATE kg_edges SET status = 'superseded', superseded_by = ?, retired_at = ?, "
                 "retired_reason = 'user_corrected' WHERE triple_id = ?", (by, now, triple_id))


def newest_rival_edge(conn: Connection, subject_id: int, predicate: str, object_id: int) -> tuple[str, float] | None:
    """(triple_id, last_observed_at) of the subject's latest active edge of the predicate to another object."""
    return conn.execute(
        "SELECT triple_id, last_observed_at FROM kg_edges WHERE subject_id = ? AND predicate = ? "
        "AND object_id != ? AND status = 'active' ORDER BY last_observed_at DESC LIMIT 1",
        (subject_id, predicate, object_id)).fetchone()
