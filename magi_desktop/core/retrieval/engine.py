"""The L1 query pipeline: mode → temporal intent → recall paths in parallel → fusion → filters → rerank → pack."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import tzinfo

import numpy as np

from ..contracts import parse_timestamp
from ..embed import Embedder
from ..errors import InvalidInput
from ..speakers import speaking_names
from ..store import Database, entities, l1, tiers, vectors
from ..store.entities import EntityLinker
from ..store.mentions import about_window
from . import aggregate, current_facts, paths, requests, schedule
from .address import addressed_only
from .facts import FactRecall
from .fusion import RECENCY_BONUS, RerankFeatures, diversify, rerank, short_unmatched, weighted_rrf
from .modes import FACT_MODES, MODES, PATH_WEIGHTS, SESSION_SPREAD, QueryMode, classify_mode, scopes_for
from .pack import (
    DEFAULT_TOKEN_BUDGET,
    FINDING_TEXT_CHARS,
    EvidencePack,
    Finding,
    Layer,
    PackStatus,
    bundles_of,
    fit_budget,
    iso,
    timeline_of,
)
from .skills import L4Recall
from .slots import reserve_slots
from .structured import L2Recall, ground, user_names
from .sufficiency import Asked, judge
from .summaries import SUMMARY_TYPES, L3Recall
from .temporal import TemporalIntent, parse_temporal
from .terms import content_terms, quoted_phrases, shared_stems, stem, stems
from .window_listing import WindowListing, assistant_only, window_only

MAX_LIMIT = 100
FETCH_K = 50                 # candidates each path returns (100: +1 point dev recall, over the 3x latency bar)
SEEDS = 5                    # first-wave hits that seed entity, graph and neighbour expansion
CANDIDATES = 60              # fused candidates hydrated and filtered
CURRENT_STATE_RECENCY = 0.30  # "now" and "recently" questions: the newer statement should win
ANCHOR_SIMILARITY = 0.5      # an anchor event must match the anchor phrase at least this well
ANCHOR_CANDIDATES = 10
ARTEFACT_OVERLAP = 0.8       # a stored turn this close to the question is the question itself
L2_LEAD = 3                  # L2 findings added to a pack, at most (beyond its L1 limit)
L2_LEAD_MODES = frozenset({"current_state"})   # where they go first; elsewhere after the L1 findings
L3_LEAD = 3                  # L3 summaries and insights added to a pack, at most
L3_LEAD_MODES = frozenset({"summary", "activity_summary"})      # broad questions: summaries first
L3_FOLLOW_MODES = frozenset({"temporal_compare", "strategy"})  # insights and reflections help, after L1
FACT_LEAD = 2                # saved facts (remember / extraction) added to a pack, at most
L4_LEAD = 3                  # tool experience leads "how did we handle this" (strategy) packs

# The words of a question searched for. Paths OR a LIKE per word: thousands of distinct words (a pasted
# document) made SQLite refuse the statement ("Expression tree is too large"), and a 20,000-character
# "word" the LIKE pattern ("too complex", over 50,000 bytes) — both found by fuzzing.
MAX_TERMS = 64
MAX_TERM_CHARS = 200

_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="magi-recall")


def _meaningful(vector: np.ndarray) -> np.ndarray | None:
    """The question's vector, or None when it has no direction (a question of only punctuation embeds to
    zeros with the hashing embedder): no cosine distance to it exists, so the vector paths sit out."""
    return vector if np.all(np.isfinite(vector)) and np.any(vector) else None


@dataclass
class _Recalled:
    """What a question's hot recall found, kept for its retry with the cold tier's words."""

    first_wave: dict[str, list[int]]
    anchor: _Candidate | None
    trace: dict                          # the first wave's and the anchor's trace entries
    query_vector: np.ndarray | None


@dataclass
class _Candidate:
    rowid: int
    event_id: str
    timestamp: float
    content: str
    source: str
    source_item_id: str | None
    session_id: str | None
    author: str
    evidence_class: str
    content_type: str
    speaker: str | None


class Retriever:
    """Answers ``Memory.query``. Stateless apart from its collaborators; safe from any thread."""

    def __init__(self, db: Database, embedder: Embedder, entities: EntityLinker,
                 vectors_ready: Callable[[], bool] = lambda: True, graph: paths.GraphSpreader | None = None):
        self.db = db
        self.embedder = embedder
        self.entities = entities
        self.vectors_ready = vectors_ready
        self.graph = graph or paths.NoGraph()

    # ------------------------------------------------------------------ query

    def query(self, text: str, mode: str | None = None, now: float | None = None, limit: int = 10,
              session_id: str | None = None, token_budget: int = DEFAULT_TOKEN_BUDGET,
              tz: tzinfo | None = None, summary_type: str | None = None, search_all: bool = False) -> EvidencePack:
        """The evidence pack for ``text``. The cold tier (store/tiers.py) is searched when the question's window
        is older than the age events go cold at, when ``search_all``, and when nothing hot answers."""
        pack, recalled = self._query(text, mode, now, limit, session_id, token_budget, tz, summary_type, search_all)
        # A window's listing (no recall) reads its events whatever their tier: asking again would list the same.
        if (pack.insufficient_evidence and recalled is not None and not pack.trace.get("cold")
                and tiers.has_cold(self.db.reader())):
            hot_ms = pack.trace["total_ms"]
            pack, _ = self._query(text, mode, now, limit, session_id, token_budget, tz, summary_type, True, recalled)
            pack.trace["cold"] = "searched by words: nothing hot answered"
            pack.trace["total_ms"] = round(hot_ms + pack.trace["total_ms"], 2)      # the hot recall's time too
        return pack

    def _query(self, text: str, mode: str | None, now: float | None, limit: int, session_id: str | None,
               token_budget: int, tz: tzinfo | None, summary_type: str | None, search_all: bool,
               recalled: _Recalled | None = None) -> tuple[EvidencePack, _Recalled | None]:
        """The pack, and what its hot recall found (None for a listing). Given ``recalled`` (the hot recall of a
        question nothing hot answered), the cold tier is searched by its words only and added to it."""
        started = time.perf_counter()
        if mode is not None and mode not in MODES:
            raise InvalidInput(f"unknown query mode {mode!r}; one of {', '.join(MODES)}")
        if summary_type is not None and summary_type not in SUMMARY_TYPES:
            raise InvalidInput(f"unknown summary type {summary_type!r}; one of {', '.join(SUMMARY_TYPES)}")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be a whole number from 1 to {MAX_LIMIT}")
        now = time.time() if now is None else parse_timestamp(now, "now")
        chosen, rule = (mode, "caller") if mode else classify_mode(text)
        temporal = parse_temporal(text, now, tz)
        if rule == "default" and temporal.anchor is not None:
            chosen, rule = "temporal_compare", "anchor"  # "买空气炸锅前…" compares in time
        named = self._known_by(self.entities.find(self.db.reader(), text), now)
        names = {key for _, _, key in named}
        terms = [t for t in content_terms(text) if len(t) <= MAX_TERM_CHARS][:MAX_TERMS]
        # Names pick *whose* events, the other words *which*: searching "Caroline" too would
        # rank every short line of hers ("Caroline: Thanks!") above the one that answers.
        whose = speaking_names(self.db.reader(), named)   # speakers; other names stay search words
        name_stems = {stem(word) for key in whose for word in key.split()}
        focus = [t for t in terms if stem(t) not in name_stems]
        ctx = paths.QueryContext(text=text, terms=focus or terms, scopes=scopes_for(chosen), now=now,
                                 fetch_k=FETCH_K, window=temporal.window, quoted=quoted_phrases(text),
                                 entity_ids=[entity_id for entity_id, _, _ in named], entity_names=names)
        trace: dict = {"mode_source": rule, "temporal": temporal.to_dict(), "terms": ctx.terms,
                       "entities": sorted(names), "paths": {}}
        ctx.cold = search_all or (temporal.window is not None and tiers.reaches_cold(self.db.reader(),
                                                                                      temporal.window.start, now))
        # A retry reuses the hot vector ranking: the cold chunks have no approximate index, and an exact scan of
        # years of them would cost every unanswerable question a second or more.
        ctx.cold_vectors = ctx.cold and recalled is None
        if ctx.cold:
            trace["cold"] = "searched: " + ("asked to search everything" if search_all else "the window is old")
        if window_only(terms, temporal) or assistant_only(text, terms, chosen):
            return self._listed(text, chosen, ctx, temporal, window_only(terms, temporal), limit, token_budget,
                                started, trace), None

        first_wave = self._first_wave(ctx, chosen, trace) if recalled is None else self._with_cold_words(
            recalled, ctx, chosen, trace)
        rankings = self._second_wave(first_wave, ctx, chosen, trace)     # a retry's seeds may be cold hits
        rankings[schedule.PATH] = schedule.plans(self.db.reader(), ctx)   # an ahead window's plans, soonest first
        fused = weighted_rrf(rankings, PATH_WEIGHTS[chosen] | schedule.PATH_WEIGHTS)
        candidates = self._hydrate([rowid for rowid, _ in fused[:CANDIDATES]])
        if recalled is None:
            anchor = self._resolve_anchor(temporal, ctx, trace)
        else:           # the anchor is looked for in the hot tier: the same event again
            anchor = recalled.anchor
            if "anchor" in recalled.trace:
                trace["anchor"] = recalled.trace["anchor"]
        kept = self._filter(candidates, chosen, temporal, anchor, text, session_id, trace)
        qualifying, similarity = self._qualifying(kept, ctx, trace)
        qualifying = schedule.screen(qualifying, kept, temporal, ctx.terms, text, now, trace)

        by_rowid = {c.rowid: c for c in qualifying}
        term_stems = {stem(t) for t in ctx.terms}
        features = {c.rowid: RerankFeatures(c.author, c.content, c.timestamp, self._about(c, ctx.entity_names),
                                            short_unmatched(c.content, term_stems, c.speaker)) for c in qualifying}
        recency = CURRENT_STATE_RECENCY if chosen == "current_state" or temporal.recent else RECENCY_BONUS
        ranked = rerank([(rowid, score) for rowid, score in fused if rowid in by_rowid], features, ctx.quoted, now,
                        recency_weight=recency)
        sessions = {rowid: c.session_id for rowid, c in by_rowid.items()}
        spread = aggregate.LIST_SPREAD if aggregate.asks_for_many(text) else 0.0   # "What books has Tim read?"
        ranked = diversify(ranked, sessions, max(SESSION_SPREAD.get(chosen, 0.0), spread))
        ranked = reserve_slots(ranked, rankings, fused, sessions,   # each path's best, the best sessions, each person
                               {rowid: c.speaker for rowid, c in by_rowid.items()}, whose)
        ranked = schedule.soonest_first(ranked, {rowid: c.timestamp for rowid, c in by_rowid.items()}, temporal)
        found_by = {rowid: [p for p, ids in rankings.items() if rowid in ids] for rowid in by_rowid}
        findings = self._deduplicated([self._finding(by_rowid[rowid], score, found_by[rowid])
                                       for rowid, score in ranked], limit)
        self._flag_indirect(findings, ctx, temporal)
        findings = self._with_l2(findings, text, chosen, named, temporal, anchor, ctx, limit, trace)
        findings = self._with_facts(findings, chosen, ctx, trace)
        if requests.is_request_question(text):
            findings = requests.with_requests(self.db.reader(), findings, ctx, trace)
        findings = self._with_l3(findings, chosen, temporal, ctx, trace, summary_type)
        if chosen == "strategy":
            skills = L4Recall(self.db.reader()).findings(ctx, limit=L4_LEAD)
            trace["l4"] = {"findings": len(skills)}
            findings = skills + findings
        schedule.mark_plans(findings, now)
        findings, used_tokens = fit_budget(findings, token_budget)
        grounding = trace.get("l2", {}).get("grounding", {})
        asked = Asked.of(text, named, temporal, trace.get("window_fallback", False),
                         [*grounding.get("predicates", ()), *grounding.get("traits", ())],
                         # "Where do I work?" asks the present as "…now?" does, unless it asks for the past
                         current=chosen == "current_state" or current_facts.asks_present(
                             text, grounding, temporal.window is not None), request=requests.is_request_question(text),
                         user_names=user_names(self.db.reader()))
        trace["sufficiency"] = judge(findings, asked,
                                     {by_rowid[rowid].event_id: score for rowid, score in similarity.items()
                                      if rowid in by_rowid}, text)
        trace["tokens"] = used_tokens
        trace["total_ms"] = round((time.perf_counter() - started) * 1000, 2)
        kept_trace = {"paths": {name: trace["paths"][name] for name in first_wave if name in trace["paths"]}}
        if "anchor" in trace:
            kept_trace["anchor"] = trace["anchor"]
        return (self._pack(text, chosen, findings, temporal, anchor, trace),
                _Recalled(first_wave, anchor, kept_trace, ctx.query_vector))

    def _listed(self, text: str, mode: str, ctx: paths.QueryContext, temporal: TemporalIntent, of_window: bool,
                limit: int, token_budget: int, started: float, trace: dict) -> EvidencePack:
        """A question naming only a time (or only the assistant's words) lists what happened (window_listing.py)."""
        listing = WindowListing(self.db.reader())
        result = listing.window(ctx, temporal, limit) if of_window else listing.assistant(ctx, text, temporal)
        schedule.mark_plans(result.findings, ctx.now)
        findings, trace["tokens"] = fit_budget(result.findings, token_budget)
        trace["listing"] = result.to_trace()
        trace["total_ms"] = round((time.perf_counter() - started) * 1000, 2)
        pack = self._pack(text, mode, findings, temporal, None, trace)
        if findings:
            pack.answering_hints.append(result.hint())
        return pack

    def _with_l2(self, findings: list[Finding], text: str, mode: str, named, temporal: TemporalIntent,
                 anchor: _Candidate | None, ctx: paths.QueryContext, limit: int, trace: dict) -> list[Finding]:
        """Add what L2 knows: a plan-matched fact leads (up to L2_LEAD), the rest follows the L1 findings."""
        started = time.perf_counter()
        conn = self.db.reader()
        plan = ground(conn, text, mode, named, temporal)
        derived = L2Recall(conn).findings(plan, ctx, temporal, anchor.timestamp if anchor else None)
        trace["l2"] = {"grounding": plan.to_dict(), "findings": len(derived),
                       "ms": round((time.perf_counter() - started) * 1000, 2)}
        if not derived:
            return current_facts.newest_first(conn, findings, plan, ctx.now, trace)
        # Up to L2_LEAD derived facts come on top of the ``limit`` L1 findings. "Now" questions
        # are what L2 is for: its current facts lead. Elsewhere the user's own words lead and
        # the derived facts follow (on LoCoMo dev, L2 facts leading every mode cost 13 points
        # of all@1, and placed after the fifth finding 5 points of all@10: the rules extract loosely).
        placed = derived[:L2_LEAD]
        ordered = placed + findings if mode in L2_LEAD_MODES else findings + placed
        return current_facts.newest_first(conn, ordered, plan, ctx.now, trace)

    def _with_facts(self, findings: list[Finding], mode: str, ctx: paths.QueryContext, trace: dict) -> list[Finding]:
        """Saved facts that cover the question: first for "now" questions (as L2), else after the findings."""
        facts = FactRecall(self.db.reader()).findings(ctx, limit=FACT_LEAD)
        trace["facts"] = {"findings": len(facts)}
        return facts + findings if mode in L2_LEAD_MODES else findings + facts

    def _with_l3(self, findings: list[Finding], mode: str, temporal: TemporalIntent, ctx: paths.QueryContext,
                 trace: dict, summary_type: str | None = None) -> list[Finding]:
        """Broad questions get the summaries of their window first, with the events they cite for drill-down.
        ``summary_type`` (temporal / thematic / insight) restricts them; any mode then asks L3."""
        if mode not in L3_LEAD_MODES and mode not in L3_FOLLOW_MODES and summary_type is None:
            return findings
        started = time.perf_counter()
        derived = L3Recall(self.db.reader()).findings(ctx, temporal, mode, limit=L3_LEAD, summary_type=summary_type)
        trace["l3"] = {"findings": len(derived), "ms": round((time.perf_counter() - started) * 1000, 2)}
        lead = mode in L3_LEAD_MODES or summary_type is not None
        return derived + findings if lead else findings + derived

    def _known_by(self, named: list[tuple[int, str, str]], now: float) -> list[tuple[int, str, str]]:
        """Only entities that some event up to ``now`` mentions: a name first heard later is unknown yet."""
        conn = self.db.reader()
        return [entry for entry in named if entities.mentioned_by(conn, entry[0], now)]

    # ----------------------------------------------------------------- recall

    def _timed(self, ctx: paths.QueryContext, mode: str, trace: dict, name: str, fn: Callable[..., list[int]],
               *args) -> tuple[str, list[int]]:
        """Run one path (``name``; "<path>_cold" for its cold half alone) if the mode weighs it, into the trace."""
        if PATH_WEIGHTS[mode].get(name.removesuffix("_cold"), 0) <= 0:
            return name, []
        started = time.perf_counter()
        result = fn(self.db.reader(), ctx, *args)
        trace["paths"][name] = {"hits": len(result), "ms": round((time.perf_counter() - started) * 1000, 2)}
        return name, result

    def _first_wave(self, ctx: paths.QueryContext, mode: str, trace: dict) -> dict[str, list[int]]:
        """The paths independent of each other, in parallel."""

        def vector_path(conn, ctx_):
            if not self.vectors_ready():
                return []
            ctx_.query_vector = _meaningful(self.embedder.embed([ctx_.text])[0])
            return paths.vector(conn, ctx_)

        first = [_POOL.submit(self._timed, ctx, mode, trace, name, fn) for name, fn in (
            ("bm25", paths.bm25), ("temporal_bm25", paths.temporal_bm25), ("vector", vector_path),
            ("keyword", paths.keyword))]
        return dict(future.result() for future in first)

    def _with_cold_words(self, recalled: _Recalled, ctx: paths.QueryContext, mode: str,
                         trace: dict) -> dict[str, list[int]]:
        """The hot first wave of a question nothing hot answered, with the cold tier's words added: the cold
        full-text index, and the keyword scan again when the question has tokens for it (the events it reads
        now include the cold ones). The hot rankings and the question's vector are reused as they are."""
        trace["paths"].update(recalled.trace.get("paths", {}))
        ctx.query_vector = recalled.query_vector
        searches = [("bm25_cold", paths.cold_bm25), ("temporal_bm25_cold", paths.cold_temporal_bm25)]
        if paths.keyword_tokens(ctx):
            searches.append(("keyword_cold", paths.keyword))
        found = dict(future.result() for future in [_POOL.submit(self._timed, ctx, mode, trace, name, fn)
                                                     for name, fn in searches])
        rankings = dict(recalled.first_wave)
        for name in ("bm25", "temporal_bm25"):
            rankings[name] = paths.with_cold(rankings[name], found[name + "_cold"], ctx.fetch_k)
        if "keyword_cold" in found:
            rankings["keyword"] = found["keyword_cold"]
        return rankings

    def _second_wave(self, rankings: dict[str, list[int]], ctx: paths.QueryContext, mode: str,
                     trace: dict) -> dict[str, list[int]]:
        """The paths seeded by the first wave's best hits, added to its rankings."""
        seeds = [rowid for rowid, _ in weighted_rrf(rankings, PATH_WEIGHTS[mode])[:SEEDS]]
        second = [
            _POOL.submit(self._timed, ctx, mode, trace, "entity", paths.entity_expansion, seeds, ctx.entity_ids),
            _POOL.submit(self._timed, ctx, mode, trace, "graph", self.graph.spread, seeds),
            _POOL.submit(self._timed, ctx, mode, trace, "neighbors", paths.neighbours, seeds),
        ]
        return {**rankings, **dict(future.result() for future in second)}

    def _hydrate(self, rowids: Sequence[int]) -> list[_Candidate]:
        if not rowids:
            return []
        rows = l1.candidate_rows(self.db.reader(), rowids)
        order = {rowid: i for i, rowid in enumerate(rowids)}
        return sorted((_Candidate(*row) for row in rows), key=lambda c: order[c.rowid])

    # ---------------------------------------------------------------- filters

    def _resolve_anchor(self, temporal: TemporalIntent, ctx: paths.QueryContext, trace: dict) -> _Candidate | None:
        """The event a "before X" / "X之前" question is anchored on: the best fact-scope match for X."""
        if temporal.anchor is None:
            return None
        anchor_ctx = paths.QueryContext(text=temporal.anchor.phrase, terms=content_terms(temporal.anchor.phrase),
                                        scopes=ctx.scopes, now=ctx.now, fetch_k=10)
        rankings = {"bm25": paths.bm25(self.db.reader(), anchor_ctx)}
        if self.vectors_ready():
            anchor_ctx.query_vector = _meaningful(self.embedder.embed([anchor_ctx.text])[0])
            rankings["vector"] = paths.vector(self.db.reader(), anchor_ctx)
        fused = weighted_rrf(rankings, {"bm25": 1.0, "vector": 1.0})
        trace["anchor"] = {"phrase": temporal.anchor.phrase, "direction": temporal.anchor.direction, "event_id": None}
        candidates = self._hydrate([rowid for rowid, _ in fused[:ANCHOR_CANDIDATES]])
        # Only a clear match may cut the timeline: every word of the phrase, or a close meaning.
        wanted = stems(temporal.anchor.phrase)
        similarity = self._similarities(candidates, anchor_ctx)
        exact = [c for c in candidates
                 if wanted and wanted <= shared_stems(wanted, c.content + " " + (c.speaker or ""))]
        close = [c for c in candidates if similarity.get(c.rowid, 0.0) >= ANCHOR_SIMILARITY]
        if exact:
            # The event is its first mention: "my air fryer broke" later does not move "before the air fryer".
            anchor = min(exact, key=lambda c: c.timestamp)
        elif close:
            anchor = close[0]  # meaning alone is too loose to pick the first of several; take the best
        else:
            if candidates:
                trace["anchor"]["weak_match"] = candidates[0].event_id
            return None
        trace["anchor"].update(event_id=anchor.event_id, occurred_at=anchor.timestamp)
        return anchor

    def _filter(self, candidates: list[_Candidate], mode: str, temporal: TemporalIntent, anchor: _Candidate | None,
                question: str, session_id: str | None, trace: dict) -> list[_Candidate]:
        dropped = {"window": 0, "anchor": 0, "artefact": 0}
        question_stems = stems(question)
        kept = [c for c in candidates
                if not (mode in FACT_MODES and self._is_artefact(c, question, question_stems, session_id))]
        dropped["artefact"] = len(candidates) - len(kept)
        if temporal.window is not None:
            about = about_window(self.db.reader(), [c.rowid for c in kept], temporal.window.start, temporal.window.end)
            inside = [c for c in kept if temporal.window.contains(c.timestamp) or c.rowid in about]
            dropped["window"] = len(kept) - len(inside)
            if inside or not kept:
                kept = inside
            else:
                # Nothing was recorded in the window: keep the rest, which may *describe*
                # that time ("where did I live four years ago"), and say so in the hints.
                trace["window_fallback"] = True
                dropped["window"] = 0
        if anchor is not None and temporal.anchor is not None:  # an anchor event is found only for an anchor phrase
            before = temporal.anchor.direction == "before"
            on_side = [c for c in kept if c.rowid != anchor.rowid and
                       (c.timestamp < anchor.timestamp if before else c.timestamp > anchor.timestamp)]
            dropped["anchor"] = len(kept) - len(on_side)
            kept = on_side
        trace["dropped"] = dropped
        return kept

    @staticmethod
    def _about(c: _Candidate, names: set[str]) -> bool:
        """Is the candidate said by, or does it mention, an entity the question names?"""
        if not names:
            return False
        if c.speaker and " ".join(c.speaker.casefold().split()) in names:
            return True
        lowered = c.content.casefold()   # "Wow, Melanie!" speaks to her: it is not about her
        return any(name in lowered and not addressed_only(lowered, name) for name in names)

    @staticmethod
    def _is_artefact(c: _Candidate, question: str, question_stems: frozenset[str], session_id: str | None) -> bool:
        """The user's own question (or the assistant's earlier answer) is not evidence for a fact."""
        if c.author == "assistant" or c.content_type == "question":
            return True
        if " ".join(c.content.casefold().split()) == " ".join(question.casefold().split()):
            return True
        if session_id is None or c.session_id != session_id or not question_stems:
            return False
        shared = shared_stems(question_stems, c.content)   # none shared: no overlap, and no Chinese segmented
        return bool(shared) and len(shared) / len(question_stems | stems(c.content)) >= ARTEFACT_OVERLAP

    def _qualifying(self, candidates: list[_Candidate], ctx: paths.QueryContext,
                    trace: dict) -> tuple[list[_Candidate], dict[int, float]]:
        """Drop candidates nothing ties to the question, so an unsupported question gets no findings; with the
        question's similarity to each (sufficiency uses it)."""
        question_stems = {stem(t) for t in ctx.terms}
        floor = self.embedder.similarity_floor
        similarity = self._similarities(candidates, ctx)
        kept = [c for c in candidates
                if shared_stems(question_stems, c.content + " " + (c.speaker or ""))
                or similarity.get(c.rowid, 0.0) >= floor]
        trace["unqualified"] = len(candidates) - len(kept)
        return kept, similarity

    def _similarities(self, candidates: list[_Candidate], ctx: paths.QueryContext) -> dict[int, float]:
        if ctx.query_vector is None or not candidates:
            return {}
        rows = vectors.chunk_vectors_of_events(self.db.reader(), [c.rowid for c in candidates])
        best: dict[int, float] = {}
        for rowid, blob in rows:
            score = float(np.frombuffer(blob, dtype=np.float32) @ ctx.query_vector)
            best[rowid] = max(best.get(rowid, -1.0), score)
        return best

    # ------------------------------------------------------------------- pack

    @staticmethod
    def _finding(c: _Candidate, score: float, found_by: list[str]) -> Finding:
        text = c.content if len(c.content) <= FINDING_TEXT_CHARS else c.content[: FINDING_TEXT_CHARS - 1] + "…"
        return Finding(
            layer=Layer.L1, text=text, occurred_at=c.timestamp, source=c.source, source_item_id=c.source_item_id,
            session_id=c.session_id, author=c.author, evidence_class=c.evidence_class, score=score,
            event_id=c.event_id, speaker=c.speaker, supporting_event_ids=[c.event_id],
            supporting_source_item_ids=[c.source_item_id] if c.source_item_id else [], paths=found_by,
        )

    @staticmethod
    def _deduplicated(findings: list[Finding], limit: int) -> list[Finding]:
        """One finding per distinct text (the same thing sent twice, or by two sources); the others support it."""
        kept: dict[str, Finding] = {}
        for finding in findings:
            key = " ".join(finding.text.casefold().split())
            first = kept.get(key)
            if first is None:
                if len(kept) == limit:
                    break
                kept[key] = finding
            else:
                first.supporting_event_ids.append(finding.event_id)
                first.supporting_source_item_ids.extend(finding.supporting_source_item_ids)
        return list(kept.values())

    @staticmethod
    def _flag_indirect(findings: list[Finding], ctx: paths.QueryContext, temporal: TemporalIntent) -> None:
        """A finding that shares none of the question's words (beyond the anchor) is indirect evidence."""
        anchor_stems = stems(temporal.anchor.phrase) if temporal.anchor else set()
        asked = {stem(t) for t in ctx.terms} - anchor_stems
        for finding in findings:
            finding.indirect = bool(asked) and not shared_stems(asked, finding.text + " " + (finding.speaker or ""))

    def _pack(self, text: str, mode: str, findings: list[Finding], temporal: TemporalIntent,
              anchor: _Candidate | None, trace: dict) -> EvidencePack:
        hints = ["Answer only from these findings and cite their event ids."]
        insufficient = not any(f.answers for f in findings)    # architecture §16: no finding answers
        if insufficient:
            hints.append("Do not guess: no stored evidence supports an answer; say you do not know.")
            if findings:
                hints.append("The findings are related only (answers: false) and do not answer the question: they "
                             "are about someone else, another attribute, another time or a source that cannot "
                             "tell this.")
        if mode in FACT_MODES:
            hints.append("Findings are the user's own statements and observed activity; assistant replies and the "
                         "user's questions are excluded.")
        else:
            hints.append("Findings may include assistant turns: what the assistant said is not a fact about the user.")
        if any(f.evidence_class.startswith("fact_") for f in findings):
            hints.append("Fact findings carry their evidence: only 'stated' ones are the user's words; 'accepted' "
                         "ones are the agent's conclusion the user accepted; 'unknown' ones have no proof kept.")
        if any(f.layer == "L2" for f in findings):
            hints.append("L2 findings are derived from the cited events: 'current' holds as of the question's time, "
                         "'history' held before and was replaced or lapsed; cite their supporting event ids.")
        indirect = [f for f in findings if f.indirect]
        if indirect:
            asked = ", ".join(t for t in trace["terms"] if not temporal.anchor
                              or stem(t) not in stems(temporal.anchor.phrase))
            hints.append(f"Evidence is indirect: {len(indirect)} finding(s) do not say '{asked}' outright "
                         "(e.g. a new item mentioned, not a purchase stated); say that the answer is inferred.")
        if any(f.kind == requests.REQUEST_KIND for f in findings):
            hints.append(requests.REQUEST_HINT)
        if any(f.layer == "L1" and f.status == "history" for f in findings):
            hints.append(current_facts.HISTORY_HINT)
        if mode == "current_state" and len(findings) > 1:
            hints.append("Prefer the most recent finding for the current state; older ones are history.")
        if temporal.anchor is not None:
            if anchor is not None:
                hints.append(f"Only events {temporal.anchor.direction} '{temporal.anchor.phrase}' "
                             f"({iso(anchor.timestamp)}, event {anchor.event_id}) are included.")
            else:
                hints.append(f"'{temporal.anchor.phrase}' was not found in memory, so the time order is unknown.")
        hints += schedule.hints(findings, temporal)
        if temporal.window is not None and trace.get("window_fallback"):
            hints.append(f"Nothing was recorded in '{temporal.window.label}'; these findings come from other times "
                         "and may only describe it — check their dates.")
        elif temporal.window is not None:
            hints.append(f"Only events in the window '{temporal.window.label}' are included.")
        entity_refs = self._entity_refs(findings)
        if findings and insufficient:
            summary = f"No finding answers this ({mode} mode); {len(findings)} related finding(s) do not."
        elif findings:
            top = findings[0]
            summary = (f"{len(findings)} finding(s) in {mode} mode; best: \"{top.text[:120]}\" "
                       f"({iso(top.occurred_at)[:10]}, {top.author}).")
        else:
            summary = f"No stored evidence answers this ({mode} mode)."
        return EvidencePack(
            status=PackStatus.INSUFFICIENT if insufficient else PackStatus.OK, query=text, query_mode=QueryMode(mode),
            summary=summary, findings=findings, insufficient_evidence=insufficient, answering_hints=hints,
            entity_refs=entity_refs, timeline=timeline_of(findings) if len(findings) > 1 else [],
            bundles=bundles_of(findings) if len(findings) > 1 else [], trace=trace,
        )

    def _entity_refs(self, findings: list[Finding]) -> list[dict]:
        if not findings:
            return []
        rows = entities.entities_of_events(self.db.reader(), [f.event_id for f in findings])
        return [{"entity_id": r[0], "name": r[1], "entity_type": r[2], "findings": r[3]} for r in rows]

