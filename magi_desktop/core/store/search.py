"""The searches that are the whole point of a recall path: FTS5 ``MATCH`` ranked by BM25 and sqlite-vec
``vec0`` nearest neighbours, over events, facts, summaries and skills.

Each function returns ids (or rows) best first; the recall modules (``core/retrieval``) build the match
expression, fuse the rankings and decide what a hit means. The KNN functions take the query vector as float32
bytes; the indexes live in :mod:`.vectors`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..text import fts_or_query, query_terms
from . import ann, statistics, tiers
from .connection import Connection, placeholders
from .erasure import fts_tables
from .l1 import EventFilter
from .mentions import mention_params, mention_sql, mentioning_rowids
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


# A term matching more events than this is searched in its newest COMMON_SCAN matches the question may see, scored
# by its IDF alone: FTS5's bm25() counts every match of each phrase for the IDF and scores every match, so a common
# word cost grows with all history (a million events: ~1 s a question). Below the cap nothing changes: the exact
# bm25 ranking, the same rows (a 10k memory, LoCoMo, the tests). A rarer term keeps all its matches, however
# old: it is what BM25 ranks by.
MATCH_CAP = 2000
COMMON_SCAN = MATCH_CAP
# A common term's newest COMMON_SCAN matches are read, keeping those the question's filter passes (scope, record
# time, tier, window); when fewer than the answer needs are kept, the next older COMMON_SCAN, and so on until enough
# are kept or this many were read: a scope whose events are few among a word's matches (a conversation's "python"
# among thousands of page visits) or a replay's "now" before the newest matches is still reached, and the rows one
# term reads stay bounded.
COMMON_READ = 10 * COMMON_SCAN
_EVERY_ROWID = (-(2**63), 2**63 - 1)


def _window_sql(window: tuple[float, float] | None) -> tuple[str, list[Any]]:
    if window is None:
        return "", []
    # recorded in the window, or saying a time in it ("last month I …")
    return (f" AND (e.timestamp >= ? AND e.timestamp < ? OR {mention_sql('e')})",
            [window[0], window[1], *mention_params(window[0], window[1])])


def _window_rowids(conn: Connection, window: tuple[float, float]) -> tuple[int, int]:
    """The rowid range holding every event that happened in the window, so a common term's scan starts at the
    window, not at the newest event ((1, 0), empty, when there is none). The events mentioning a time in it are
    read apart (:func:`_mentioning`): one said months later would stretch the range to every match since."""
    low, high = conn.execute("SELECT min(id), max(id) FROM fact_events WHERE timestamp >= ? AND timestamp < ?",
                             window).fetchone()
    return (low, high) if low is not None else (1, 0)


def _newest_kept(conn: Connection, index: str, phrase: str, keep: EventFilter, rowids: tuple[int, int],
                 enough: int) -> list[int]:
    """Rowids of the newest matches of ``phrase`` in ``index`` within the rowid range ``rowids`` that pass ``keep``
    (a clause over ``fact_events e``): those among its newest COMMON_SCAN matches, and while fewer than ``enough``
    are kept, among the next older ones, from at most COMMON_READ matches read."""
    low, high = rowids
    kept: list[int] = []
    read = 0
    while read < COMMON_READ and low <= high and (read == 0 or len(kept) < enough):
        block = min(COMMON_SCAN, COMMON_READ - read)
        rows = conn.execute(
            f"SELECT f.id, EXISTS (SELECT 1 FROM fact_events e WHERE e.id = f.id AND {keep.clause}) FROM "
            f"(SELECT rowid AS id FROM {index} WHERE {index} MATCH ? AND rowid BETWEEN ? AND ? "
            "ORDER BY rowid DESC LIMIT ?) f", [*keep.args, phrase, low, high, block]).fetchall()
        read += len(rows)
        kept += [rowid for rowid, passed in rows if passed]
        if len(rows) < block:
            break
        high = min(row[0] for row in rows) - 1      # the outer SELECT need not keep the subquery's order
    return kept[:COMMON_SCAN]


# A common term's matches among the events mentioning a time in the window are read in runs of nearby rowids, one
# ranged MATCH a run: opening a common term's doclist costs ~0.1 ms a statement, so a lookup per mentioning event
# cost 40 ms for 300 of them (100k events, "last week"), and one range over them all would read every match between
# the first and one said months later. Rowids further apart than the gap start a new run, and so does one that
# would make its run span more than the span (a year's mentions a few thousand rowids apart are not one range).
MENTION_RUN_GAP = 2_000
MENTION_RUN_SPAN = 20_000


def _runs(rowids: Sequence[int], gap: int, span: int | None = None) -> list[tuple[int, int]]:
    """(first, last) of the runs of ascending ``rowids`` in which neighbours are at most ``gap`` apart and, given
    ``span``, first and last at most ``span`` apart."""
    runs: list[tuple[int, int]] = []
    for rowid in rowids:
        if runs and rowid - runs[-1][1] <= gap and (span is None or rowid - runs[-1][0] <= span):
            runs[-1] = (runs[-1][0], rowid)
        else:
            runs.append((rowid, rowid))
    return runs


def _mentioning(conn: Connection, index: str, phrase: str, keep: EventFilter, said: Sequence[int]) -> list[int]:
    """Rowids of the newest COMMON_SCAN matches of ``phrase`` among ``said`` (the events mentioning a time in the
    window, ascending) that pass ``keep``: the runs read newest first, until that many are kept or COMMON_READ
    matches were read."""
    wanted = set(said)
    kept: list[int] = []
    read = 0
    for low, high in reversed(_runs(said, MENTION_RUN_GAP, MENTION_RUN_SPAN)):
        if read >= COMMON_READ:
            break
        in_run = [rowid for (rowid,) in conn.execute(
            f"SELECT rowid FROM {index} WHERE {index} MATCH ? AND rowid BETWEEN ? AND ?", (phrase, low, high))]
        read += len(in_run)
        matched = [rowid for rowid in in_run if rowid in wanted]
        if matched:
            kept += [row[0] for row in conn.execute(
                f"SELECT e.id FROM fact_events e WHERE e.id IN (SELECT value FROM json_each(?)) AND {keep.clause} "
                "ORDER BY e.id DESC LIMIT ?", [json.dumps(matched), *keep.args, COMMON_SCAN - len(kept)])]
        if len(kept) >= COMMON_SCAN:
            break
    return kept


def _newest_matches(conn: Connection, term: str, cap: int, index: str = "fact_events_fts") -> tuple[int, int | None]:
    """(how many of the newest ``cap`` rows of ``index`` match ``term``, the oldest rowid among them)."""
    return conn.execute(
        f"SELECT count(*), min(rowid) FROM (SELECT rowid FROM {index} WHERE {index} MATCH ? "
        "ORDER BY rowid DESC LIMIT ?)", (term, cap)).fetchone()


def _estimated_idf(conn: Connection, cap: int, oldest_of_newest: int | None) -> float:
    """FTS5's bm25 IDF of a term with more than ``cap`` matches, its match count estimated from how far back its
    newest ``cap`` reach (uniform density)."""
    newest = conn.execute("SELECT max(id) FROM fact_events").fetchone()[0]
    events = statistics.events_total(conn)
    span = max(1, (newest or 0) - (oldest_of_newest or 0) + 1)
    hits = min(events, max(cap, cap * events / span))
    idf = math.log((events - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0 else 1e-6         # FTS5 clamps a non-positive IDF the same way


def events_matching(conn: Connection, terms: Sequence[str], visible: EventFilter, window: tuple[float, float] | None,
                    context_weight: float, limit: int, index: str = "fact_events_fts") -> list[int]:
    """Rowids of the visible events that match any of ``terms``, by BM25 (the previous turn's words weighted
    ``context_weight`` against the event's own); with a window, only those in it or mentioning a time in it.

    A term with more than :data:`MATCH_CAP` matches counts in the visible ones (in the window) among its newest
    :data:`COMMON_SCAN` only — further back while fewer than ``limit`` are, up to :data:`COMMON_READ` matches read —
    with its IDF (and no term frequency): the cost of a question is bounded by its number of words, not by the
    history.
    ``index``: the hot tier's (default) or the cold tier's, ``fact_events_cold_fts`` (store/tiers.py)."""
    if not terms:
        return []
    phrases = [fts_or_query([t]) for t in terms]
    probes = {p: _newest_matches(conn, p, MATCH_CAP + 1, index) for p in phrases}
    common = [p for p in phrases if probes[p][0] > MATCH_CAP]
    rare = [p for p in phrases if 0 < probes[p][0] <= MATCH_CAP]
    where, where_args = _window_sql(window)
    rank = f"bm25({index}, 1.0, {context_weight})"
    rare_sql = (f"SELECT e.id, {rank} FROM {index} JOIN fact_events e ON e.id = {index}.rowid "
                f"WHERE {index} MATCH ? AND {visible.clause}{where}")
    rare_args = [" OR ".join(rare), *visible.args, *where_args]
    if not common:
        if not rare:
            return []
        return [row[0] for row in conn.execute(f"{rare_sql} ORDER BY {rank} LIMIT ?", [*rare_args, limit])]
    scores: dict[int, float] = dict(conn.execute(rare_sql, rare_args).fetchall()) if rare else {}
    keep = EventFilter(visible.clause + where, [*visible.args, *where_args])
    rowids = _EVERY_ROWID if window is None else _window_rowids(conn, window)
    said = [] if window is None else mentioning_rowids(conn, *window)      # only a common word asks for them
    for phrase in common:
        idf = _estimated_idf(conn, MATCH_CAP, probes[phrase][1])
        kept = _newest_kept(conn, index, phrase, keep, rowids, limit)
        if window is not None:
            kept = sorted({*kept, *_mentioning(conn, index, phrase, keep, said)}, reverse=True)[:COMMON_SCAN]
        for rowid in kept:
            scores[rowid] = scores.get(rowid, 0.0) - idf
    # best first; a tie (a common word's matches, all scored alike) newest first
    return [rowid for rowid, _ in sorted(scores.items(), key=lambda item: (item[1], -item[0]))[:limit]]


def cold_events_matching(conn: Connection, terms: Sequence[str], visible: EventFilter,
                         window: tuple[float, float] | None, context_weight: float, limit: int) -> list[int]:
    """As :func:`events_matching`, over the cold tier's index (store/tiers.py): asked only when a question
    reaches back (an old window, "search everything", nothing hot answers); bounded the same way."""
    return events_matching(conn, terms, visible, window, context_weight, limit, index="fact_events_cold_fts")


def nearest_cold_event_chunks(conn: Connection, vector: bytes, k: int, scopes: Sequence[str], now: float,
                              window: tuple[float, float] | None = None) -> list[tuple[int, float | None]]:
    """As :func:`nearest_event_chunks`, over the cold tier's chunks (an exact scan: asked only when a question
    reaches back). With a window, only the chunks of the months it spans and of the cold events mentioning a time
    in it are read (the table's partitions, store/vectors.py): while some event is in it, those outside are
    dropped (retrieval/engine.py ``_filter``). When none is, the engine keeps the others, which may describe that
    time, so then the whole table is read."""
    if not index_exists(conn, COLD_VEC_TABLE):
        return []
    codes = scope_codes(scopes)
    months, month_args = "", []
    if window is not None:
        # The vec0 column occurred_at holds the recorded time, which a plan (recorded before it happens) or an
        # event mentioning the window (recorded after it) does not bound: the month the event happened in does.
        said = {tiers.month_of(ts) for (ts,) in conn.execute(
            f"SELECT e.timestamp FROM fact_events e WHERE e.tier = {tiers.COLD} AND {mention_sql('e')}",
            mention_params(*window))}
        wanted = sorted(set(tiers.months_between(*window)) | said)
        months, month_args = f" AND month IN ({placeholders(len(wanted))})", wanted
    # sqlite-vec answers k rows per value of ``month IN (...)``: the nearest k of them all are kept.
    rows = conn.execute(
        f"SELECT event_rowid, distance FROM {COLD_VEC_TABLE} WHERE embedding MATCH ? AND k = ?{months} "
        f"AND scope_code IN ({placeholders(len(codes))}) AND occurred_at <= ? ORDER BY distance",
        [vector, k, *month_args, *codes, now]).fetchall()[:k]
    if rows or window is None:
        return rows
    return nearest_cold_event_chunks(conn, vector, k, scopes, now)


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


# The keyword fallback reads the text of this many of the newest visible events at most: instr() has no index,
# and over all history it cost ~0.1 s per 100k events. A memory this small is read whole, as before.
CONTAINING_SCAN = 20_000


def events_containing(conn: Connection, tokens: Sequence[str], visible: EventFilter, limit: int) -> list[int]:
    """Rowids of the visible events whose text contains any of these (lower-case) tokens, the most tokens first,
    then newest, among the newest :data:`CONTAINING_SCAN` visible events: the fallback for what FTS
    tokenisation splits or misses."""
    hits = " + ".join("(instr(lower(e.content), ?) > 0)" for _ in tokens)
    return [row[0] for row in conn.execute(
        f"SELECT id FROM (SELECT e.id, e.timestamp, {hits} AS n FROM fact_events e WHERE {visible.clause} "
        f"ORDER BY e.timestamp DESC LIMIT {CONTAINING_SCAN}) WHERE n > 0 ORDER BY n DESC, timestamp DESC LIMIT ?",
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
    """Ids of the summaries passing ``where`` among the ``k`` nearest ``vector``, nearest first. With the window
    of :func:`.summaries.recall_filter`, the ``k`` nearest of the summaries overlapping it, from the partitions of
    the months since it began (their windows end after it begins): the cost follows how far back the question
    reaches, not every summary ever written. Empty while the summary index does not exist."""
    if not index_exists(conn, SUMMARY_VEC_TABLE):
        return []
    inside, inside_args = "", []
    if where.window is not None:
        now, start, end = where.window
        inside = " AND month BETWEEN ? AND ? AND window_end > ? AND window_end <= ? AND window_start < ?"
        inside_args = [tiers.month_of(start), tiers.month_of(now), start, now, end]
    return [r[0] for r in conn.execute(
        f"SELECT s.summary_id FROM (SELECT rowid, distance FROM {SUMMARY_VEC_TABLE} WHERE embedding MATCH ? "
        f"AND k = ?{inside}) v JOIN l3_summaries s ON s.summary_id = v.rowid WHERE {where.clause} "
        "ORDER BY v.distance", [vector, k, *inside_args, *where.args])]


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
