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

from ..store.connection import Connection
from ..store.vectors import SUMMARY_VEC_TABLE
from ..text import fts_or_query
from .fusion import weighted_rrf
from .pack import Finding
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


class L3Recall:
    def __init__(self, conn: Connection):
        self.conn = conn

    def findings(self, ctx: QueryContext, temporal: TemporalIntent, mode: str, limit: int = 3,
                 summary_type: str | None = None) -> list[Finding]:
        window = question_window(temporal, ctx.now)
        category = MODE_CATEGORY.get(mode)
        fetch = int(FETCH_K * (CATEGORY_FETCH_FACTOR if category else 1))
        where = ["s.window_end <= ?", "s.window_end > ?", "s.window_start < ?"]
        args: list = [ctx.now, window.start, window.end]
        if summary_type is not None:
            where.append("s.summary_type = ?")
            args.append(summary_type)
        clause = " AND ".join(where)
        rankings = {
            "bm25": self._bm25(ctx, clause, args, fetch),
            "vector": self._vector(ctx, clause, args, fetch),
            "keyword": self._keyword(ctx, clause, args, fetch),
            "window": self._window_fit(window, clause, args, fetch),
            "entity": self._about(ctx, clause, args, fetch),
        }
        fused = weighted_rrf(rankings, WEIGHTS)
        if not fused:
            return []
        rows = {r[0]: r for r in self.conn.execute(
            "SELECT summary_id, summary_type, summary_category, granularity, title, content, window_start, "
            f"window_end FROM l3_summaries WHERE summary_id IN ({', '.join('?' * len(fused))})",
            [sid for sid, _ in fused])}
        scored = []
        for sid, score in fused:
            if category is not None and rows[sid][2] == category:
                score *= CATEGORY_BOOST
            scored.append((sid, score))
        scored.sort(key=lambda item: -item[1])
        found_by = {sid: [p for p, ids in rankings.items() if sid in ids] for sid, _ in scored}
        return [self._finding(rows[sid], score, found_by[sid], ctx.now) for sid, score in scored[:limit]]

    def _bm25(self, ctx: QueryContext, clause: str, args: list, fetch: int) -> list[int]:
        # Names count here: a summary about "falcon" is found by "falcon" (L1 recall sets names aside
        # to pick whose events, not which; a summary has no speaker to pick).
        terms = [*ctx.terms, *sorted(ctx.entity_names)]
        if not terms:
            return []
        return [r[0] for r in self.conn.execute(
            "SELECT s.summary_id FROM l3_summaries_fts f JOIN l3_summaries s ON s.summary_id = f.rowid "
            f"WHERE l3_summaries_fts MATCH ? AND {clause} ORDER BY bm25(l3_summaries_fts, 2.0, 1.0) LIMIT ?",
            [fts_or_query(terms), *args, fetch])]

    def _vector(self, ctx: QueryContext, clause: str, args: list, fetch: int) -> list[int]:
        if ctx.query_vector is None:
            return []
        if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (SUMMARY_VEC_TABLE,)).fetchone():
            return []
        import numpy as np

        vector = np.asarray(ctx.query_vector, dtype=np.float32).tobytes()
        return [r[0] for r in self.conn.execute(
            f"SELECT s.summary_id FROM (SELECT rowid, distance FROM {SUMMARY_VEC_TABLE} WHERE embedding MATCH ? "
            f"AND k = ?) v JOIN l3_summaries s ON s.summary_id = v.rowid WHERE {clause} ORDER BY v.distance",
            [vector, fetch * 4, *args])][:fetch]

    def _keyword(self, ctx: QueryContext, clause: str, args: list, fetch: int) -> list[int]:
        tokens = keyword_tokens(ctx)
        if not tokens:
            return []
        likes = " OR ".join("lower(s.title || ' ' || s.content) LIKE ?" for _ in tokens)
        return [r[0] for r in self.conn.execute(
            f"SELECT s.summary_id FROM l3_summaries s WHERE ({likes}) AND {clause} "
            "ORDER BY s.window_end DESC LIMIT ?", [*(f"%{t.lower()}%" for t in tokens), *args, fetch])]

    def _about(self, ctx: QueryContext, clause: str, args: list, fetch: int) -> list[int]:
        """Thematic summaries about an entity the question names."""
        if not ctx.entity_names:
            return []
        names = sorted(ctx.entity_names)
        return [r[0] for r in self.conn.execute(
            "SELECT s.summary_id FROM l3_summaries s WHERE s.summary_type = 'thematic' AND "
            f"lower(json_extract(s.data_json, '$.entity')) IN ({', '.join('?' * len(names))}) AND {clause} "
            "ORDER BY s.window_end DESC LIMIT ?", [*names, *args, fetch])]

    def _window_fit(self, window: Window, clause: str, args: list, fetch: int) -> list[int]:
        """Temporal summaries whose span is closest to the question's, then the most covered, then newest."""
        span = max(3600.0, window.end - window.start)
        rows = self.conn.execute(
            "SELECT s.summary_id, s.granularity, s.window_start, s.window_end FROM l3_summaries s "
            f"WHERE s.summary_type = 'temporal' AND {clause}", args).fetchall()

        def fit(row) -> tuple[float, float, float]:
            _, granularity, start, end = row
            size = SPANS.get(granularity, span)
            mismatch = abs((size / span) - 1.0) if size <= span else (size / span - 1.0) * 2
            covered = (min(end, window.end) - max(start, window.start)) / (end - start)
            return (mismatch, -covered, -end)

        return [r[0] for r in sorted(rows, key=fit)[:fetch]]

    def _finding(self, row, score: float, paths: list[str], now: float) -> Finding:
        sid, stype, category, granularity, title, content, start, end = row
        evidence = self.conn.execute(
            "SELECT e.event_id, e.source_item_id, e.session_id FROM summary_event_links l JOIN fact_events e "
            "ON e.id = l.event_rowid WHERE l.summary_id = ? AND e.recorded_at <= ? "
            "ORDER BY (e.author_type = 'user') DESC, e.timestamp DESC LIMIT ?", (sid, now, SUPPORT)).fetchall()
        kind = granularity or category
        return Finding(layer="L3", text=f"[{stype} · {kind}] {content}", occurred_at=min(end, now), source="l3",
                       source_item_id=None, session_id=None, author="memory", evidence_class="derived", score=score,
                       event_id=f"summary:{sid}", supporting_event_ids=[e[0] for e in evidence],
                       supporting_source_item_ids=[e[1] for e in evidence if e[1]], paths=[f"l3_{p}" for p in paths],
                       status=category)
