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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..store import entities, l1, search
from ..store.connection import Connection
from ..store.l1 import EventFilter
from ..text import has_cjk
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
    cold: bool = False        # the cold tier is searched too (store/tiers.py): an old window, "everything"
    cold_vectors: bool = False  # … and its chunk vectors (an exact scan)


def _visible(ctx: QueryContext) -> EventFilter:
    return l1.visible_filter(ctx.scopes, ctx.now, cold=ctx.cold)


def with_cold(hot: list[int], cold: list[int], k: int) -> list[int]:
    """Hot and cold hits of one path taken in turn, each list's order kept: their scores come from two indexes."""
    merged = [rowid for pair in zip(hot, cold, strict=False) for rowid in pair]
    shorter = min(len(hot), len(cold))
    return list(dict.fromkeys(merged + hot[shorter:] + cold[shorter:]))[:k]


# BM25 weight of the previous turn's words next to the turn's own (tuned on LoCoMo dev: +2 points all@10).
CONTEXT_WEIGHT = 0.5


def _bounds(window: Window | None) -> tuple[float, float] | None:
    return None if window is None else (window.start, window.end)


def bm25(conn: Connection, ctx: QueryContext, window: Window | None = None) -> list[int]:
    if not ctx.terms:
        return []
    hot = search.events_matching(conn, ctx.terms, _visible(ctx), _bounds(window), CONTEXT_WEIGHT, ctx.fetch_k)
    return with_cold(hot, cold_bm25(conn, ctx, window), ctx.fetch_k) if ctx.cold else hot


def cold_bm25(conn: Connection, ctx: QueryContext, window: Window | None = None) -> list[int]:
    """BM25 over the cold tier's index alone (store/tiers.py)."""
    if not ctx.terms:
        return []
    return search.cold_events_matching(conn, ctx.terms, _visible(ctx), _bounds(window), CONTEXT_WEIGHT, ctx.fetch_k)


def temporal_bm25(conn: Connection, ctx: QueryContext) -> list[int]:
    """BM25 inside the question's time window; only when it has one."""
    return bm25(conn, ctx, ctx.window) if ctx.window is not None else []


def cold_temporal_bm25(conn: Connection, ctx: QueryContext) -> list[int]:
    """:func:`temporal_bm25` over the cold tier's index alone."""
    return cold_bm25(conn, ctx, ctx.window) if ctx.window is not None else []


def vector(conn: Connection, ctx: QueryContext) -> list[int]:
    """Nearest chunks, folded back to events (an event ranks by its best chunk)."""
    if ctx.query_vector is None:
        return []
    vector_bytes = np.ascontiguousarray(ctx.query_vector, dtype=np.float32).tobytes()
    rows = search.nearest_event_chunks(conn, vector_bytes, ctx.fetch_k * 2, ctx.scopes, ctx.now)
    if ctx.cold_vectors:    # distances of one space: one ranking
        rows = sorted([*rows, *search.nearest_cold_event_chunks(conn, vector_bytes, ctx.fetch_k * 2, ctx.scopes,
                                                                 ctx.now, _bounds(ctx.window))],
                      key=lambda r: r[1] or 0.0)
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
    return search.events_containing(conn, [t.lower() for t in tokens], _visible(ctx), ctx.fetch_k)


# An entity linked to more than this share of the visible events (the user, a
# chat partner) says nothing about relevance: expansion skips it. Past MAX_ENTITY_EVENTS
# (the share of 20k events) it is skipped too: reading an entity's events costs their
# number (an entity of 29k events out of a million: ~90 ms a question; at 5,000 events a
# question's expansion still read 20 ms of them at 100k), and one that common picks out
# nothing either (at 100k, 1,000 against 5,000 left 12 of load.py's 15 top-tens the same).
MAX_ENTITY_SHARE = 0.05
MIN_ENTITY_EVENTS = 50
MAX_ENTITY_EVENTS = 1_000


def entity_expansion(conn: Connection, ctx: QueryContext, seeds: Sequence[int],
                     query_entities: Sequence[int] = ()) -> list[int]:
    """From seed events (and entities named in the question) to other events of the same entities."""
    if not seeds and not query_entities:
        return []
    entity_ids = entities.entities_of_event_rowids(conn, seeds)
    entity_ids |= set(query_entities)
    if not entity_ids:
        return []
    selective = selective_entities(conn, entity_ids, ctx.now)
    if not selective:
        return []
    rows = entities.events_sharing_entities(conn, selective, _visible(ctx), ctx.fetch_k + len(seeds))
    seed_set = set(seeds)
    return [rowid for rowid in rows if rowid not in seed_set][: ctx.fetch_k]


def selective_entities(conn: Connection, entity_ids: Iterable[int], now: float) -> list[int]:
    """The entities that pick out few events: a speaker in all of them would lead everywhere."""
    total = l1.events_recorded_by(conn, now)
    limit = min(MAX_ENTITY_EVENTS, max(MIN_ENTITY_EVENTS, int(total * MAX_ENTITY_SHARE)))
    return [eid for eid in entity_ids if entities.events_mentioning_capped(conn, eid, now, limit + 1) <= limit]


NEIGHBOUR_TURNS = 2


def neighbours(conn: Connection, ctx: QueryContext, seeds: Sequence[int]) -> list[int]:
    """Each seed followed by the turns just after and before it in its conversation.

    The seed leads its own group, so a turn never outranks the hit it was found next to.
    """
    visible = _visible(ctx)
    ranked: list[int] = []
    seen: set[int] = set()
    for seed in seeds:
        if seed not in seen:
            seen.add(seed)
            ranked.append(seed)
        row = l1.session_and_time(conn, seed)
        if row is None:
            continue
        session_id, ts = row
        if session_id is None:
            continue
        before: list[int | None] = [*l1.session_turns_before(conn, session_id, ts, visible, NEIGHBOUR_TURNS)]
        after: list[int | None] = [*l1.session_turns_after(conn, session_id, ts, visible, NEIGHBOUR_TURNS)]
        for pair in zip(after + [None] * NEIGHBOUR_TURNS, before + [None] * NEIGHBOUR_TURNS, strict=False):
            for item in pair:
                if item is not None and item not in seen:
                    seen.add(item)
                    ranked.append(item)
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
