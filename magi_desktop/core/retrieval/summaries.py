"""L3 recall (architecture §5, §7): summaries and insights for broad questions — "what was I busy
with last week", "how did my focus change this month".

Rankings fused by RRF: BM25 over the summaries' full-text index (names included), their
vectors, a keyword match, how well a summary's window fits the question's (a week summary for "last week", day
summaries for "yesterday"), and the thematic summaries about an entity the question names.
``summary_type`` (temporal / thematic / insight) is a hard filter;
``summary_category`` only a soft boost (×1.8, fetch_k ×1.5): a misread intent must not kill
the whole path. Only windows closed by the question's ``now`` count, and a finding cites
its events so the answer can drill down to L1.
"""

from __future__ import annotations

from ..store import search
from ..store import summaries as store_summaries
from ..store.connection import Connection
from ..store.summaries import SummaryFilter
from ..text import fts_or_query
from .fusion import weighted_rrf
from .pack import Finding, Layer
from .paths import QueryContext, keyword_tokens
from .temporal import TemporalIntent, Window

SUMMARY_TYPES = ("temporal", "thematic", "insight")
FETCH_K = 20
CATEGORY_BOOST = 1.8
CATEGORY_FETCH_FACTOR = 1.5
RECENT_DAYS = 7              # "recently", or no time at all: the last week
SUPPORT = 20                 # event ids a finding carries for drill-down
WEIGHTS = {"bm25": 1.0, "vector": 0.8, "keyword": 0.5, "window": 1.2, "entity": 1.5}
SPANS = {"hour": 3600.0, "day": 86400.0, "week": 7 * 86400.0, "month": 30.4 * 86400.0}
# Which category a mode looks for (a soft preference).
MODE_CATEGORY = {"activity_summary": "activity_overview", "summary": None, "strategy": "task_reflection",
                 "temporal_compare": "state_change"}


def question_window(temporal: TemporalIntent, now: float) -> Window:
    if temporal.window is not None:
        return temporal.window
    return Window(now - RECENT_DAYS * 86400.0, now, "the last week")


def _mostly_elsewhere(row, window: Window) -> bool:
    """A temporal summary no longer than the question's window that lies partly outside it: a day summary of the
    machine's calendar day, asked "yesterday" in a zone many hours away, tells of the user's today as well. Less
    than three quarters in is left out: eleven hours away, the machine's day is 13 hours of the user's yesterday
    and 11 of their today, and what it says of the morning is not yesterday's (the window's events are listed
    anyway)."""
    _, stype, _, _, _, _, start, end = row
    if stype != "temporal" or end - start <= 0 or end - start > window.end - window.start:
        return False
    return (min(end, window.end) - max(start, window.start)) / (end - start) < 0.75


class L3Recall:
    def __init__(self, conn: Connection):
        self.conn = conn

    def findings(self, ctx: QueryContext, temporal: TemporalIntent, mode: str, limit: int = 3,
                 summary_type: str | None = None) -> list[Finding]:
        window = question_window(temporal, ctx.now)
        category = MODE_CATEGORY.get(mode)
        fetch = int(FETCH_K * (CATEGORY_FETCH_FACTOR if category else 1))
        where = store_summaries.recall_filter(ctx.now, window.start, window.end, summary_type)
        rankings = {
            "bm25": self._bm25(ctx, where, fetch),
            "vector": self._vector(ctx, where, fetch),
            "keyword": self._keyword(ctx, where, fetch),
            "window": self._window_fit(window, where, fetch),
            "entity": self._about(ctx, where, fetch),
        }
        fused = weighted_rrf(rankings, WEIGHTS)
        if not fused:
            return []
        rows = store_summaries.summary_rows(self.conn, [sid for sid, _ in fused])
        scored = []
        for sid, score in fused:
            if temporal.window is not None and _mostly_elsewhere(rows[sid], window):
                continue
            if category is not None and rows[sid][2] == category:
                score *= CATEGORY_BOOST
            scored.append((sid, score))
        scored.sort(key=lambda item: -item[1])
        found_by = {sid: [p for p, ids in rankings.items() if sid in ids] for sid, _ in scored}
        return [self._finding(rows[sid], score, found_by[sid], ctx.now) for sid, score in scored[:limit]]

    def _bm25(self, ctx: QueryContext, where: SummaryFilter, fetch: int) -> list[int]:
        # Names count here: a summary about "falcon" is found by "falcon" (L1 recall sets names aside
        # to pick whose events, not which; a summary has no speaker to pick).
        terms = [*ctx.terms, *sorted(ctx.entity_names)]
        if not terms:
            return []
        return search.summaries_matching(self.conn, fts_or_query(terms), where, fetch)

    def _vector(self, ctx: QueryContext, where: SummaryFilter, fetch: int) -> list[int]:
        if ctx.query_vector is None:
            return []
        import numpy as np

        vector = np.asarray(ctx.query_vector, dtype=np.float32).tobytes()
        return search.nearest_summaries(self.conn, vector, fetch * 4, where)[:fetch]

    def _keyword(self, ctx: QueryContext, where: SummaryFilter, fetch: int) -> list[int]:
        tokens = keyword_tokens(ctx)
        if not tokens:
            return []
        return store_summaries.summaries_mentioning(self.conn, tokens, where, fetch)

    def _about(self, ctx: QueryContext, where: SummaryFilter, fetch: int) -> list[int]:
        """Thematic summaries about an entity the question names."""
        if not ctx.entity_names:
            return []
        return store_summaries.thematic_summaries_about(self.conn, sorted(ctx.entity_names), where, fetch)

    def _window_fit(self, window: Window, where: SummaryFilter, fetch: int) -> list[int]:
        """Temporal summaries whose span is closest to the question's, then the most covered, then newest."""
        span = max(3600.0, window.end - window.start)
        rows = store_summaries.temporal_windows(self.conn, where)

        def fit(row) -> tuple[float, float, float]:
            _, granularity, start, end = row
            size = SPANS.get(granularity, span)
            mismatch = abs((size / span) - 1.0) if size <= span else (size / span - 1.0) * 2
            covered = (min(end, window.end) - max(start, window.start)) / (end - start)
            return (mismatch, -covered, -end)

        return [r[0] for r in sorted(rows, key=fit)[:fetch]]

    def _finding(self, row, score: float, paths: list[str], now: float) -> Finding:
        sid, stype, category, granularity, title, content, start, end = row
        evidence = store_summaries.cited_events(self.conn, sid, now, SUPPORT)
        kind = granularity or category
        return Finding(layer=Layer.L3, text=f"[{stype} · {kind}] {content}", occurred_at=min(end, now), source="l3",
                       source_item_id=None, session_id=None, author="memory", evidence_class="derived", score=score,
                       event_id=f"summary:{sid}", supporting_event_ids=[e[0] for e in evidence],
                       supporting_source_item_ids=[e[1] for e in evidence if e[1]], paths=[f"l3_{p}" for p in paths],
                       status=category)
