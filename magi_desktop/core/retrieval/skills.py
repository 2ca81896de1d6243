"""L4 recall (architecture §5, §8): the experience with tools, for "how did we handle this last time".

BM25 over the skills' tool, category and strategy, and a keyword match, fused by RRF. No
vector path: the table is small (one row per tool and category) and a tool's name must
match, not resemble. A finding cites the recent executions it was learnt from.
"""

from __future__ import annotations

from ..store import search
from ..store import skills as store_skills
from ..store.connection import Connection
from ..text import fts_or_query
from .fusion import weighted_rrf
from .pack import Finding, Layer
from .paths import QueryContext, keyword_tokens

FETCH_K = 20
WEIGHTS = {"bm25": 1.0, "keyword": 0.6}
SUPPORT = 5


class L4Recall:
    def __init__(self, conn: Connection):
        self.conn = conn

    def findings(self, ctx: QueryContext, limit: int = 3) -> list[Finding]:
        rankings = {"bm25": self._bm25(ctx), "keyword": self._keyword(ctx)}
        fused = weighted_rrf(rankings, WEIGHTS)[:limit]
        out = []
        for skill_id, score in fused:
            summary = store_skills.skill_summary(self.conn, skill_id)
            if summary is None:
                continue                      # forgotten since the search found it
            tool, category, runs, ok, state, prompt, last = summary
            if last is not None and last > ctx.now:
                continue                      # learnt after the question's time
            traces = store_skills.recent_executions(self.conn, skill_id, ctx.now, SUPPORT)
            rate = f"{ok / runs:.0%}" if runs else "n/a"
            text = f"[skill] {tool} ({category}): {runs} runs, {rate} succeeded, breaker {state}."
            if prompt:
                text += f" Strategy: {prompt}"
            out.append(Finding(layer=Layer.L4, text=text, occurred_at=min(last or ctx.now, ctx.now), source="l4",
                               source_item_id=None, session_id=traces[0][2] if traces else None, author="memory",
                               evidence_class="derived", score=score, event_id=f"skill:{skill_id}",
                               supporting_event_ids=[t[0] for t in traces],
                               supporting_source_item_ids=[t[1] for t in traces if t[1]],
                               paths=[f"l4_{p}" for p, ids in rankings.items() if skill_id in ids], status=state))
        return out

    def _bm25(self, ctx: QueryContext) -> list[int]:
        if not ctx.terms:
            return []
        return search.skills_matching(self.conn, fts_or_query(ctx.terms), FETCH_K)

    def _keyword(self, ctx: QueryContext) -> list[int]:
        tokens = keyword_tokens(ctx)
        if not tokens:
            return []
        return store_skills.skills_mentioning(self.conn, tokens, FETCH_K)
