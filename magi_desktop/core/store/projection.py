"""What the L2 projection reads to put a batch of events before the model (``core/l2/projection.py``): the
events themselves, the turns before them, the entities they name and other events about those, the active
facts a claim may conflict with and their evidence, and the earlier event that may have caused a state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .connection import Connection, placeholders


def events_to_project(conn: Connection, rowids: Sequence[int]) -> list[tuple[Any, ...]]:
    """(id, event_id, timestamp, content, session_id, author_type, evidence_class, event_type, metadata_json) of
    these events, in time order."""
    return conn.execute(
        "SELECT id, event_id, timestamp, content, session_id, author_type, evidence_class, event_type, "
        f"metadata_json FROM fact_events WHERE id IN ({placeholders(len(rowids))}) ORDER BY timestamp, id",
        rowids).fetchall()


def chat_turns_before(conn: Connection, session_id: str, timestamp: float, limit: int) -> list[tuple[str, str]]:
    """(author_type, content) of a session's last ``limit`` chat messages before ``timestamp``, newest first."""
    return conn.execute(
        "SELECT author_type, content FROM fact_events WHERE session_id = ? AND timestamp < ? "
        "AND event_type = 'CHAT_MESSAGE' ORDER BY timestamp DESC LIMIT ?", (session_id, timestamp, limit)).fetchall()


def entities_named_in(conn: Connection, text: str, limit: int) -> list[int]:
    """The active entities whose name key (three characters or more) appears in ``text``, longest first."""
    return [r[0] for r in conn.execute(
        "SELECT entity_id FROM entity_catalog WHERE status = 'active' AND length(name_key) >= 3 "
        "AND instr(?, name_key) > 0 ORDER BY length(name_key) DESC LIMIT ?", (text, limit))]


def entities_linked_to(conn: Connection, event_rowids: Sequence[int]) -> list[int]:
    """The entities these events are linked to, each once."""
    return [r[0] for r in conn.execute(
        f"SELECT DISTINCT entity_id FROM l1_event_entities WHERE event_rowid IN ({placeholders(len(event_rowids))})",
        event_rowids)]


def known_entity_rows(conn: Connection, entity_ids: Sequence[int]) -> list[tuple[int, str, str, str]]:
    """(entity_id, name, entity_type, aliases_json) of those of these entities that are active."""
    return conn.execute(
        f"SELECT entity_id, name, entity_type, aliases_json FROM entity_catalog WHERE entity_id IN "
        f"({placeholders(len(entity_ids))}) AND status = 'active'", entity_ids).fetchall()


def related_event_texts(conn: Connection, entity_ids: Sequence[int], before: float, not_sessions: Sequence[str],
                        limit: int, recent: int) -> list[str]:
    """The contents of the authoritative events about these entities before ``before`` outside these sessions,
    newest first (ties: the later stored first).

    The ``recent`` events before ``before`` are looked through first (index only, then a probe of each one's
    links): an entity the batch names is usually in them, and the answer is then the same as from all history.
    Only when they hold fewer than ``limit`` and there are older events are all the entities' events read —
    which costs as many row reads as the entities have events (an artist of a 1M-event memory: 20,000; 50–90 ms
    at 200k events)."""
    marks, sessions = placeholders(len(entity_ids)), placeholders(len(not_sessions) + 1)
    outside = (f"e.l1_retrieval_scope = 'fact_authoritative' AND (e.session_id IS NULL OR e.session_id NOT IN "
               f"({sessions})) ORDER BY e.timestamp DESC, e.id DESC LIMIT ?")
    # The window is a prefix of the answer's order (fact_events_time holds (timestamp, rowid)), so the first
    # ``limit`` found in it are the first of all history; ``+entity_id``: probe the event's few links by the
    # primary key instead of each entity's index entry.
    rows = conn.execute(
        "SELECT e.content FROM (SELECT id FROM fact_events INDEXED BY fact_events_time WHERE timestamp < ? "
        "ORDER BY timestamp DESC, id DESC LIMIT ?) w JOIN fact_events e ON e.id = w.id WHERE EXISTS (SELECT 1 FROM "
        f"l1_event_entities l WHERE l.event_rowid = w.id AND +l.entity_id IN ({marks})) AND {outside}",
        [before, recent, *entity_ids, *not_sessions, "", limit]).fetchall()
    if len(rows) < limit and conn.execute(
            "SELECT 1 FROM fact_events INDEXED BY fact_events_time WHERE timestamp < ? ORDER BY timestamp DESC, "
            "id DESC LIMIT 1 OFFSET ?", (before, recent)).fetchone() is not None:
        rows = conn.execute(
            "SELECT e.content FROM fact_events e WHERE e.id IN (SELECT l.event_rowid FROM l1_event_entities l "
            f"WHERE l.entity_id IN ({marks})) AND e.timestamp < ? AND {outside}",
            [*entity_ids, before, *not_sessions, "", limit]).fetchall()
    return [text for (text,) in rows]


def active_edges_of(conn: Connection, subject_ids: Sequence[int], predicates: Sequence[str],
                    limit: int) -> list[tuple[Any, ...]]:
    """(triple_id, subject_id, subject, predicate, object_id, object, status, last_observed_at) of these subjects'
    active edges of these predicates, last observed first."""
    return conn.execute(
        "SELECT k.triple_id, k.subject_id, s.name, k.predicate, k.object_id, o.name, k.status, k.last_observed_at "
        "FROM kg_edges k JOIN entity_catalog s ON s.entity_id = k.subject_id "
        "JOIN entity_catalog o ON o.entity_id = k.object_id "
        f"WHERE k.subject_id IN ({placeholders(len(subject_ids))}) AND k.status = 'active' "
        f"AND k.predicate IN ({placeholders(len(predicates))}) ORDER BY k.last_observed_at DESC LIMIT ?",
        [*subject_ids, *predicates, limit]).fetchall()


def edge_evidence_texts(conn: Connection, triple_id: str, limit: int) -> list[str]:
    """The contents of the newest events behind an edge."""
    return [r[0] for r in conn.execute(
        "SELECT e.content FROM l2_evidence v JOIN fact_events e ON e.id = v.event_rowid WHERE v.kind = 'edge' "
        "AND v.row_key = ? ORDER BY e.timestamp DESC LIMIT ?", (triple_id, limit))]


def possible_cause(conn: Connection, event_rowid: int, timestamp: float, window: float, session_id: str | None,
                   min_link: float) -> tuple[int, int, str] | None:
    """(event rowid, entity_id, name) of the latest authoritative event in the ``window`` seconds before
    ``timestamp``, in the event's domain (and session, if it has one), linked with at least ``min_link`` to an
    active entity that is no person, creator, state or the user."""
    return conn.execute(
        "SELECT e.id, c.entity_id, c.name FROM fact_events e JOIN l1_event_entities l ON l.event_rowid = e.id "
        "JOIN entity_catalog c ON c.entity_id = l.entity_id WHERE e.timestamp < ? AND e.timestamp >= ? "
        "AND e.memory_domain = (SELECT memory_domain FROM fact_events WHERE id = ?) "
        "AND (? IS NULL OR e.session_id = ?) AND e.l1_retrieval_scope = 'fact_authoritative' "
        "AND l.confidence >= ? AND c.status = 'active' AND c.name_key NOT LIKE '@%' "
        "AND c.entity_type NOT IN ('person', 'creator', 'state') ORDER BY e.timestamp DESC LIMIT 1",
        (timestamp, timestamp - window, event_rowid, session_id, session_id, min_link)).fetchone()
