"""The L1 recall paths (architecture §5). Each returns event rowids, best first.

First wave, independent of each other: BM25, temporal BM25, vector, keyword.
Second wave, seeded by the first wave's best hits: entity expansion, graph
spreading (fed by L2), and the neighbouring turns of a hit conversation.
Every path filters by scope and hides events *recorded* after ``now`` (architecture §16: a plan
is visible before it happens); the time window (on the time an event is about) and anchor
are applied when candidates are fetched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..store.connection import Connection
from ..store.mentions import mention_params, mention_sql
from ..store.vectors import VEC_TABLE
from ..text import fts_or_query, has_cjk
from .temporal import Window


@dataclass
class QueryContext:
    text: str
    terms: list[str]
    scopes: tuple[str, ...]
    now: float
    fetch_k: int
    window: Window | None = None
    query_vector: np.ndarray | None = None
    quoted: list[str] = field(default_factory=list)
    entity_ids: list[int] = field(default_factory=list)
    entity_names: set[str] = field(default_factory=set)


def _scope_sql(ctx: QueryContext, alias: str = "e") -> tuple[str, list]:
    marks = ", ".join("?" * len(ctx.scopes))
    return f"{alias}.l1_retrieval_scope IN ({marks}) AND {alias}.recorded_at <= ?", [*ctx.scopes, ctx.now]


# BM25 weight of the previous turn's words next to the turn's own (tuned on LoCoMo dev: +2 points all@10).
CONTEXT_WEIGHT = 0.5


def bm25(conn: Connection, ctx: QueryContext, window: Window | None = None) -> list[int]:
    if not ctx.terms:
        return []
    scope, params = _scope_sql(ctx)
    sql = ("SELECT e.id FROM fact_events_fts JOIN fact_events e ON e.id = fact_events_fts.rowid "
           f"WHERE fact_events_fts MATCH ? AND {scope}")
    args = [fts_or_query(ctx.terms), *params]
    if window is not None:   # recorded in the window, or saying a time in it ("last month I …")
        sql += f" AND (e.timestamp >= ? AND e.timestamp < ? OR {mention_sql('e')})"
        args += [window.start, window.end, *mention_params(window.start, window.end)]
    sql += f" ORDER BY bm25(fact_events_fts, 1.0, {CONTEXT_WEIGHT}) LIMIT ?"
    args.append(ctx.fetch_k)
    return [row[0] for row in conn.execute(sql, args)]


def temporal_bm25(conn: Connection, ctx: QueryContext) -> list[int]:
    """BM25 inside the question's time window; only when it has one."""
    return bm25(conn, ctx, ctx.window) if ctx.window is not None else []


def vector(conn: Connection, ctx: QueryContext) -> list[int]:
    """Nearest chunks, folded back to events (an event ranks by its best chunk)."""
    if ctx.query_vector is None:
        return []
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (VEC_TABLE,)).fetchone()
    if not exists:
        return []
    marks = ", ".join("?" * len(ctx.scopes))
    # The vec0 column named occurred_at holds the event's recorded time (embed/queue.py): visibility.
    rows = conn.execute(
        f"SELECT event_rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ? "
        f"AND l1_scope IN ({marks}) AND occurred_at <= ? ORDER BY distance",
        [np.ascontiguousarray(ctx.query_vector, dtype=np.float32).tobytes(), ctx.fetch_k * 2, *ctx.scopes, ctx.now],
    ).fetchall()
    ranked: list[int] = []
    seen: set[int] = set()
    for event_rowid, _distance in rows:
        if event_rowid not in seen:
            seen.add(event_rowid)
            ranked.append(event_rowid)
    return ranked[: ctx.fetch_k]


_SPECIAL_TOKEN = re.compile(r"[\w][\w.#@/+\-]*[\w]|\d+")


def keyword_tokens(ctx: QueryContext) -> list[str]:
    """What FTS tokenisation would split or miss: quoted phrases, ids like v2.3 or #123, CJK runs."""
    tokens = list(ctx.quoted)
    for token in _SPECIAL_TOKEN.findall(ctx.text):
        if any(ch in token for ch in ".#@/+-") or any(ch.isdigit() for ch in token):
            tokens.append(token)
    tokens += [t for t in ctx.terms if has_cjk(t) and len(t) >= 2]
    return list(dict.fromkeys(tokens))[:8]


def keyword(conn: Connection, ctx: QueryContext) -> list[int]:
    """LIKE fallback for the tokens FTS handles badly; ranked by how many tokens match."""
    tokens = keyword_tokens(ctx)
    if not tokens:
        return []
    scope, params = _scope_sql(ctx)
    hits = " + ".join("(instr(lower(e.content), ?) > 0)" for _ in tokens)
    rows = conn.execute(
        f"SELECT e.id, {hits} AS n FROM fact_events e WHERE {scope} AND n > 0 ORDER BY n DESC, e.timestamp DESC "
        "LIMIT ?",
        [*[t.lower() for t in tokens], *params, ctx.fetch_k],
    )
    return [row[0] for row in rows]


# An entity linked to more than this share of the visible events (the user, a
# chat partner) says nothing about relevance: expansion skips it.
MAX_ENTITY_SHARE = 0.05
MIN_ENTITY_EVENTS = 50


def entity_expansion(conn: Connection, ctx: QueryContext, seeds: Sequence[int],
                     query_entities: Sequence[int] = ()) -> list[int]:
    """From seed events (and entities named in the question) to other events of the same entities."""
    if not seeds and not query_entities:
        return []
    marks = ", ".join("?" * len(seeds)) or "NULL"
    entity_ids = {row[0] for row in conn.execute(
        f"SELECT DISTINCT entity_id FROM l1_event_entities WHERE event_rowid IN ({marks})", list(seeds))}
    entity_ids |= set(query_entities)
    if not entity_ids:
        return []
    selective = selective_entities(conn, entity_ids, ctx.now)
    if not selective:
        return []
    scope, params = _scope_sql(ctx)
    marks = ", ".join("?" * len(selective))
    rows = conn.execute(
        f"SELECT l.event_rowid, count(*) AS shared, max(l.confidence) AS confidence FROM l1_event_entities l "
        f"JOIN fact_events e ON e.id = l.event_rowid WHERE l.entity_id IN ({marks}) AND {scope} "
        "GROUP BY l.event_rowid ORDER BY shared DESC, confidence DESC, e.timestamp DESC LIMIT ?",
        [*selective, *params, ctx.fetch_k + len(seeds)],
    )
    seed_set = set(seeds)
    return [row[0] for row in rows if row[0] not in seed_set][: ctx.fetch_k]


def selective_entities(conn: Connection, entity_ids, now: float) -> list[int]:
    """The entities that pick out few events: a speaker in all of them would lead everywhere."""
    total = conn.execute("SELECT count(*) FROM fact_events WHERE recorded_at <= ?", (now,)).fetchone()[0]
    limit = max(MIN_ENTITY_EVENTS, int(total * MAX_ENTITY_SHARE))
    return [eid for eid in entity_ids if conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM l1_event_entities l JOIN fact_events e ON e.id = l.event_rowid "
        "WHERE l.entity_id = ? AND e.recorded_at <= ? LIMIT ?)", (eid, now, limit + 1)).fetchone()[0] <= limit]


NEIGHBOUR_TURNS = 2


def neighbours(conn: Connection, ctx: QueryContext, seeds: Sequence[int]) -> list[int]:
    """Each seed followed by the turns just after and before it in its conversation.

    The seed leads its own group, so a turn never outranks the hit it was found next to.
    """
    scope, params = _scope_sql(ctx)
    ranked: list[int] = []
    seen: set[int] = set()
    for seed in seeds:
        if seed not in seen:
            seen.add(seed)
            ranked.append(seed)
        row = conn.execute("SELECT session_id, timestamp FROM fact_events WHERE id = ?", (seed,)).fetchone()
        if row is None or row[0] is None:
            continue
        session_id, ts = row
        before = conn.execute(
            f"SELECT e.id FROM fact_events e WHERE e.session_id = ? AND e.timestamp < ? AND {scope} "
            "ORDER BY e.timestamp DESC LIMIT ?", [session_id, ts, *params, NEIGHBOUR_TURNS]).fetchall()
        after = conn.execute(
            f"SELECT e.id FROM fact_events e WHERE e.session_id = ? AND e.timestamp > ? AND {scope} "
            "ORDER BY e.timestamp ASC LIMIT ?", [session_id, ts, *params, NEIGHBOUR_TURNS]).fetchall()
        for pair in zip(after + [None] * NEIGHBOUR_TURNS, before + [None] * NEIGHBOUR_TURNS, strict=False):
            for item in pair:
                if item is not None and item[0] not in seen:
                    seen.add(item[0])
                    ranked.append(item[0])
    return ranked[: ctx.fetch_k]


class GraphSpreader(Protocol):
    """What L2 plugs in: from seed events through knowledge-graph edges to related events."""

    def spread(self, conn: Connection, ctx: QueryContext, seeds: Sequence[int]) -> list[int]:
        """Related event rowids, best first."""
        ...


class NoGraph:
    """Until L2 builds a graph there is nothing to spread over."""

    def spread(self, conn: Connection, ctx: QueryContext, seeds: Sequence[int]) -> list[int]:
        return []
