"""The searches that are the whole point of a recall path: FTS5 ``MATCH`` ranked by BM25 and sqlite-vec
``vec0`` nearest neighbours, over events, facts, summaries and skills.

Each function returns ids (or rows) best first; the recall modules (``core/retrieval``) build the match
expression, fuse the rankings and decide what a hit means. The KNN functions take the query vector as float32
bytes; the indexes live in :mod:`.vectors`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..text import fts_or_query, query_terms
from . import ann
from .connection import Connection, placeholders
from .erasure import fts_tables
from .l1 import EventFilter
from .mentions import mention_params, mention_sql
from .summaries import SummaryFilter
from .vectors import COLD_VEC_TABLE, EDGE_VEC_TABLE, ENTITY_VEC_TABLE, SUMMARY_VEC_TABLE, VEC_TABLE, scope_codes

# readers the tests and layers share

def match_count(conn: Connection, index: str, match: str) -> int:
    """How many rows of the FTS5 table ``index`` (one of :func:`.erasure.fts_tables`) an FTS5 ``MATCH``
    expression finds, the expression as given (not segmented like a recall query)."""
    if index not in fts_tables(conn):
        raise ValueError(f"no full-text index {index!r}")
    return conn.execute(f"SELECT count(*) FROM {index} WHERE {index} MATCH ?", (match,)).fetchone()[0]


def index_exists(conn: Connection, name: str) -> bool:
    """Whether the (vector) table ``name`` exists yet: it is created when an embedder first opens the memory."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


# ------------------------------------------------------------------------- events

def _directive_candidates(directive_classes: Sequence[str]) -> str:
    marks = ", ".join(f"'{c}'" for c in directive_classes)
    return (f"(e.evidence_class IN ({marks}) OR (e.evidence_class = 'user_self_report' AND e.author_type = 'user'))"
            " AND e.timestamp <= ?")


def directive_events_matching(conn: Connection, match: str, directive_classes: Sequence[str], now: float,
                              limit: int) -> list[int]:
    """Rowids of the user's directives (and the user's own self-reports) up to ``now`` that match, best first."""
    rows = conn.execute(
        "SELECT e.id FROM fact_events_fts JOIN fact_events e ON e.id = fact_events_fts.rowid "
        f"WHERE fact_events_fts MATCH ? AND {_directive_candidates(directive_classes)} "
        "ORDER BY bm25(fact_events_fts) LIMIT ?",
        (match, now, limit)).fetchall()
    return [r[0] for r in rows]


def nearest_conversation_chunks(conn: Connection, vector: bytes, k: int, now: float) -> list[tuple[int, float | None]]:
    """(event rowid, cosine distance) of the ``k`` chunks nearest ``vector`` among conversation and
    fact-authoritative events recorded by ``now``. Empty while the chunk index does not exist."""
    return nearest_event_chunks(conn, vector, k, ("conversation_only", "fact_authoritative"), now)


def events_matching(conn: Connection, match: str, visible: EventFilter, window: tuple[float, float] | None,
                    context_weight: float, limit: int) -> list[int]:
    """Rowids of the visible events that match, by BM25 (the previous turn's words weighted ``context_weight``
    against the event's own); with a window, only those in it or mentioning a time in it."""
    sql = ("SELECT e.id FROM fact_events_fts JOIN fact_events e ON e.id = fact_events_fts.rowid "
           f"WHERE fact_events_fts MATCH ? AND {visible.clause}")
    args: list[Any] = [match, *visible.args]
    if window is not None:   # recorded in the window, or saying a time in it ("last month I …")
        sql += f" AND (e.timestamp >= ? AND e.timestamp < ? OR {mention_sql('e')})"
        args += [window[0], window[1], *mention_params(window[0], window[1])]
    sql += f" ORDER BY bm25(fact_events_fts, 1.0, {context_weight}) LIMIT ?"
    args.append(limit)
    return [row[0] for row in conn.execute(sql, args)]


def cold_events_matching(conn: Connection, match: str, visible: EventFilter, window: tuple[float, float] | None,
                         context_weight: float, limit: int) -> list[int]:
    """As :func:`events_matching`, over the cold tier's index (store/tiers.py): asked only when a question
    reaches back (an old window, "search everything", nothing hot answers)."""
    sql = ("SELECT e.id FROM fact_events_cold_fts JOIN fact_events e ON e.id = fact_events_cold_fts.rowid "
           f"WHERE fact_events_cold_fts MATCH ? AND {visible.clause}")
    args: list[Any] = [match, *visible.args]
    if window is not None:
        sql += f" AND (e.timestamp >= ? AND e.timestamp < ? OR {mention_sql('e')})"
        args += [window[0], window[1], *mention_params(window[0], window[1])]
    sql += f" ORDER BY bm25(fact_events_cold_fts, 1.0, {context_weight}) LIMIT ?"
    args.append(limit)
    return [row[0] for row in conn.execute(sql, args)]


def nearest_cold_event_chunks(conn: Connection, vector: bytes, k: int, scopes: Sequence[str],
                              now: float) -> list[tuple[int, float | None]]:
    """As :func:`nearest_event_chunks`, over the cold tier's chunks (an exact scan: asked only when a question
    reaches back)."""
    if not index_exists(conn, COLD_VEC_TABLE):
        return []
    codes = scope_codes(scopes)
    return conn.execute(
        f"SELECT event_rowid, distance FROM {COLD_VEC_TABLE} WHERE embedding MATCH ? AND k = ? "
        f"AND scope_code IN ({placeholders(len(codes))}) AND occurred_at <= ? ORDER BY distance",
        [vector, k, *codes, now]).fetchall()


def nearest_event_chunks(conn: Connection, vector: bytes, k: int, scopes: Sequence[str],
                         now: float) -> list[tuple[int, float | None]]:
    """(event rowid, cosine distance) of the ``k`` chunks nearest ``vector`` among the events of these scopes
    recorded by ``now``, nearest first: from the approximate index when the memory has one that answers
    (store/ann.py), else vec0's exact scan. Empty while the chunk index does not exist."""
    if not index_exists(conn, VEC_TABLE):
        return []
    approximate = ann.nearest_chunks(conn, vector, k, scopes, now)
    if approximate is not None:
        return approximate
    codes = scope_codes(scopes)
    # The vec0 column named occurred_at holds the event's recorded time (embed/queue.py): visibility.
    return conn.execute(
        f"SELECT event_rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ? "
        f"AND scope_code IN ({placeholders(len(codes))}) AND occurred_at <= ? ORDER BY distance",
        [vector, k, *codes, now]).fetchall()


def events_containing(conn: Connection, tokens: Sequence[str], visible: EventFilter, limit: int) -> list[int]:
    """Rowids of the visible events whose text contains any of these (lower-case) tokens, the most tokens first,
    then newest: the fallback for what FTS tokenisation splits or misses."""
    hits = " + ".join("(instr(lower(e.content), ?) > 0)" for _ in tokens)
    return [row[0] for row in conn.execute(
        f"SELECT e.id, {hits} AS n FROM fact_events e WHERE {visible.clause} AND n > 0 "
        "ORDER BY n DESC, e.timestamp DESC LIMIT ?",
        [*tokens, *visible.args, limit])]


# -------------------------------------------------------------------------- facts

def active_facts_matching(conn: Connection, match: str, limit: int) -> list[tuple[Any, ...]]:
    """Active memory facts that match, best first: (fact_id, content, quote, evidence_type, source_message_id,
    proposal_message_id, accepting_message_id, session_id, created_at, bm25)."""
    return conn.execute(
        "SELECT f.fact_id, f.content, f.quote, f.evidence_type, f.source_message_id, "
        "f.proposal_message_id, f.accepting_message_id, f.session_id, f.created_at, bm25(memory_facts_fts) "
        "FROM memory_facts_fts JOIN memory_facts f ON f.fact_id = memory_facts_fts.rowid "
        "WHERE memory_facts_fts MATCH ? AND f.status = 'active' ORDER BY bm25(memory_facts_fts) LIMIT ?",
        (match, limit)).fetchall()


def stated_facts_matching(conn: Connection, match: str, limit: int) -> list[tuple[Any, ...]]:
    """Active facts the user stated that match, best first: (fact_id, content, quote, source_message_id,
    session_id, created_at)."""
    return conn.execute(
        "SELECT f.fact_id, f.content, f.quote, f.source_message_id, f.session_id, f.created_at "
        "FROM memory_facts_fts JOIN memory_facts f ON f.fact_id = memory_facts_fts.rowid "
        "WHERE memory_facts_fts MATCH ? AND f.status = 'active' AND f.evidence_type = 'stated' "
        "ORDER BY bm25(memory_facts_fts) LIMIT ?", (match, limit)).fetchall()


# -------------------------------------------------------------------------- edges

def nearest_edges(conn: Connection, vector: bytes, k: int) -> list[tuple[int, float | None]]:
    """(edge rowid, cosine distance) of the ``k`` edge sentences nearest ``vector``."""
    return conn.execute(
        f"SELECT rowid, distance FROM {EDGE_VEC_TABLE} WHERE embedding MATCH ? AND k = ?", (vector, k)).fetchall()


# ---------------------------------------------------------------------- summaries

def summaries_matching(conn: Connection, match: str, where: SummaryFilter, limit: int) -> list[int]:
    """Ids of the L3 summaries passing ``where`` that match, best first (the title weighs double)."""
    return [r[0] for r in conn.execute(
        "SELECT s.summary_id FROM l3_summaries_fts f JOIN l3_summaries s ON s.summary_id = f.rowid "
        f"WHERE l3_summaries_fts MATCH ? AND {where.clause} ORDER BY bm25(l3_summaries_fts, 2.0, 1.0) LIMIT ?",
        [match, *where.args, limit])]


def nearest_summaries(conn: Connection, vector: bytes, k: int, where: SummaryFilter) -> list[int]:
    """Ids of the summaries passing ``where`` among the ``k`` nearest ``vector``, nearest first. Empty while the
    summary index does not exist."""
    if not index_exists(conn, SUMMARY_VEC_TABLE):
        return []
    return [r[0] for r in conn.execute(
        f"SELECT s.summary_id FROM (SELECT rowid, distance FROM {SUMMARY_VEC_TABLE} WHERE embedding MATCH ? "
        f"AND k = ?) v JOIN l3_summaries s ON s.summary_id = v.rowid WHERE {where.clause} "
        "ORDER BY v.distance", [vector, k, *where.args])]


# ------------------------------------------------------------------------- skills

def skills_matching(conn: Connection, match: str, limit: int) -> list[int]:
    """Ids of the L4 skills that match, best first (the tool's name weighs three times)."""
    return [r[0] for r in conn.execute(
        "SELECT rowid FROM procedural_skills_fts WHERE procedural_skills_fts MATCH ? "
        "ORDER BY bm25(procedural_skills_fts, 3.0, 1.0, 1.0) LIMIT ?", (match, limit))]


# --------------------------------------------------------------------- the plain searches (tests, L2 resolution)

def fts_search(conn: Connection, text: str, *, limit: int = 20,
               scopes: Iterable[str] | None = None) -> list[tuple[str, float]]:
    """BM25 over fact_events_fts: (event_id, score) best first; the query is segmented like the index."""
    terms = query_terms(text)
    if not terms:
        return []
    sql = (
        "SELECT e.event_id, bm25(fact_events_fts) AS score FROM fact_events_fts "
        "JOIN fact_events e ON e.id = fact_events_fts.rowid WHERE fact_events_fts MATCH ?"
    )
    params: list[Any] = [f"content : ({fts_or_query(terms)})"]  # the event's own words, not its context
    if scopes is not None:
        scopes = list(scopes)
        sql += f" AND e.l1_retrieval_scope IN ({placeholders(len(scopes))})"
        params.extend(scopes)
    sql += " ORDER BY score LIMIT ?"
    params.append(limit)
    return [(event_id, -score) for event_id, score in conn.execute(sql, params)]


def knn(conn: Connection, query: np.ndarray, k: int = 20,
        scopes: Sequence[str] | None = None, before: float | None = None) -> list[tuple[int, int, float]]:
    """Nearest chunks: (chunk_id, event_rowid, cosine distance), nearest first."""
    sql = f"SELECT rowid, event_rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ?"
    params: list = [np.ascontiguousarray(query, dtype=np.float32).tobytes(), int(k)]
    if scopes is not None:
        codes = scope_codes(list(scopes))
        sql += f" AND scope_code IN ({placeholders(len(codes))})"
        params.extend(codes)
    if before is not None:
        sql += " AND occurred_at <= ?"
        params.append(before)
    return [tuple(row) for row in conn.execute(sql + " ORDER BY distance", params)]


def nearest_entities(conn: Connection, vector: np.ndarray, k: int) -> list[tuple[int, float | None]]:
    """(entity_id, distance) of the ``k`` entities whose name vectors are nearest ``vector``."""
    return conn.execute(f"SELECT rowid, distance FROM {ENTITY_VEC_TABLE} WHERE embedding MATCH ? AND k = ?",
                        (vector.tobytes(), k)).fetchall()
