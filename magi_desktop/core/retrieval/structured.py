"""L2 recall (architecture §5): a grounding plan, then graph edges, assertions + snapshots and episodes.

The plan reads who the question is about (named people, else the user), which
kind of fact (a predicate family from a small English + Chinese lexicon), and
whether history is wanted ("used to", "before", 以前) or only what holds now.
Everything is evaluated as of ``now``: a row first observed later is
invisible, and one retired after ``now`` was still current then. Findings are
layer "L2", marked ``status`` "current" or "history", and cite the L1 events
behind them (``supporting_event_ids`` / ``supporting_source_item_ids``).

:class:`L2Graph` is the graph-spreading path of L1 recall: from the entities of
the first hits along active edges to the events of the entities at the other end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..l2.constants import LIVE, SELF_KEY, SELF_NAME
from ..store import assertions, graph, l1, search
from ..store import entities as store_entities
from ..store import episodes as store_episodes
from ..store.connection import Connection
from ..store.evidence import visible_evidence
from .pack import Finding, Layer, iso
from .paths import QueryContext, selective_entities
from .temporal import TemporalIntent, Window
from .terms import stem

MAX_EDGES = 20
MAX_FINDINGS = 8
HISTORY_FACTOR = 0.6          # a history row ranks below a current one of the same fit
TERM_MATCH_FACTOR = 0.7       # an edge found by its words, not its predicate
HOP_FACTOR = 0.5              # one more hop away
SEMANTIC_FACTOR = 0.8         # an edge found by the meaning of its sentence (times the similarity)
EDGE_SIMILARITY = 0.35           # MiniLM cosine; "Which animal do I take care of?" ~ "the user has pet kitten" is 0.40
EDGE_KNN = 20
SPREAD_MIN_CONFIDENCE = 0.8   # event -> entity links strong enough to spread from

# Question words -> (predicates, traits). Order does not matter; every match counts.
_LEXICON: tuple[tuple[re.Pattern, tuple[str, ...], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), predicates, traits) for pattern, predicates, traits in (
        (r"\b(?:live[sd]?|living|home|moved?|reside|based|city)\b|住|搬|家在", ("LIVES_IN",), ("lives_in",)),
        (r"\b(?:from|hometown|grew up|origin)\b|老家|来自", ("FROM",), ("from",)),
        (r"\b(?:work(?:s|ed|ing)?|job|employer|company|office|career)\b|工作|上班|公司", ("WORKS_AT", "WORKS_AS"),
         ("works_at", "works_as")),
        (r"\b(?:like[sd]?|love[sd]?|favou?rite|enjoys?|fan|prefers?|interested|hobby|hobbies)\b|喜欢|爱好|兴趣|最爱",
         ("LIKES", "INTERESTED_IN", "PREFERS"), ("likes", "interested_in", "prefers")),
        (r"\b(?:dislike[sd]?|hate[sd]?|can't stand)\b|讨厌|不喜欢", ("DISLIKES",), ("dislikes",)),
        (r"\b(?:own|owns|have|has|bought|buy|purchased?|got)\b|买|有没有|拥有", ("OWNS", "BOUGHT"), ("owns",)),
        (r"\b(?:pets?|dogs?|cats?|puppy|kitten|animals?)\b|宠物|猫|狗|领养", ("HAS_PET",), ("has_pet",)),
        (r"\b(?:relationship|single|dating|girlfriend|boyfriend|partner|married|engaged|divorced|spouse)\b|分手|单身|"
         r"恋爱|对象|女朋友|男朋友|结婚|离婚|订婚", ("RELATIONSHIP_STATUS", "MARRIED_TO"),
         ("relationship_status", "married_to")),
        (r"\b(?:school|stud(?:y|ying|ies)|student|college|university|degree|grad|graduated?|master'?s|phd)\b|学校|读书|"
         r"上学|读研|研究生|大学|读博|学位|毕业", ("STUDIES_AT", "EDUCATION"), ("studies_at", "education")),
        (r"\b(?:feel(?:ing)?|mood|stress(?:ed)?|happy|sad|emotion|tired|energy|anxious|upset)\b|心情|压力|情绪|累|焦虑",
         ("HAS_STATE",), ("mood", "emotion", "stress", "energy")),
        (r"\b(?:name|called)\b|名字|叫什么", ("NAMED",), ("name",)),
        (r"\b(?:use[sd]?|using|tool|apps?|software|editor)\b|用什么|软件|工具", ("USES", "USED_APP"), ()),
        (r"\b(?:visit(?:ed|s)?|sites?|website|browse[sd]?|pages?)\b|网站|浏览", ("VISITED",), ()),
        (r"\b(?:listen(?:ed|ing)?|music|songs?|artists?|bands?)\b|听|音乐|歌", ("LISTENED_TO",), ()),
        (r"\b(?:watch(?:ed|ing)?|movies?|films?|shows?|videos?)\b|看了|电影|视频", ("WATCHED",), ()),
        (r"\b(?:commit(?:ted|s)?|repo(?:sitory)?|projects?|code)\b|项目|代码", ("COMMITTED_TO", "WORKS_ON"), ()),
        (r"\b(?:why|because|cause[sd]?|reason)\b|为什么|因为|原因", ("CAUSED", "LED_TO"), ()),
        (r"\b(?:goal|plan(?:s|ning)?|want to|hope to)\b|目标|计划|打算", ("GOAL", "PLANS"), ("goal",)),
    ))
_HISTORY = re.compile(r"\b(?:used to|before|previous(?:ly)?|formerly|past|ever|history|earlier|originally|first)\b|"
                      r"以前|之前|原来|曾经|过去|当初", re.IGNORECASE)
_SELF = re.compile(r"\b(?:i|me|my|mine|myself)\b|我", re.IGNORECASE)
_ABOUT = re.compile(r"\b(?:about|profile|know)\b|关于|了解", re.IGNORECASE)
EPISODE_MODES = frozenset({"episode_recall", "cross_session", "event_stream", "summary", "activity_summary"})


@dataclass
class Grounding:
    """What the question asks of L2."""

    subject_ids: list[int] = field(default_factory=list)
    predicates: set[str] = field(default_factory=set)
    traits: set[str] = field(default_factory=set)
    history: bool = False          # retired rows may answer
    past: bool = False             # the question asks about the past ("used to", 以前): history ranks first
    current_only: bool = False
    about: bool = False            # "what do you know about X": the snapshot answers
    episodes: bool = False

    def to_dict(self) -> dict:
        return {"subject_ids": self.subject_ids, "predicates": sorted(self.predicates), "traits": sorted(self.traits),
                "history": self.history, "past": self.past, "current_only": self.current_only, "about": self.about,
                "episodes": self.episodes}


def user_names(conn: Connection) -> frozenset[str]:
    """The names the user goes by (name keys): their entity's aliases and the live name facts ("my name is
    Sam"), so "Sam: I live in Oslo" still speaks for the user."""
    names: set[str] = set()
    row = store_entities.active_entity(conn, SELF_KEY)
    if row is None:
        return frozenset()
    names.update(json.loads(row[1] or "[]"))
    names.update(assertions.live_values(conn, row[0], "name", LIVE))
    return frozenset(store_entities.name_key(name) for name in names if isinstance(name, str))


def ground(conn: Connection, text: str, mode: str, named: Sequence[tuple[int, str, str]],
           temporal: TemporalIntent) -> Grounding:
    plan = Grounding()
    people = [entity_id for entity_id, kind, _ in named if kind in ("person", "creator")]
    plan.subject_ids = people
    if not people or _SELF.search(text):
        self_id = store_entities.active_entity_id(conn, SELF_KEY)
        if self_id is not None:
            plan.subject_ids = [*people, self_id]
    for pattern, predicates, traits in _LEXICON:
        if pattern.search(text):
            plan.predicates.update(predicates)
            plan.traits.update(traits)
    plan.current_only = mode == "current_state"
    plan.past = not plan.current_only and bool(_HISTORY.search(text))
    plan.history = not plan.current_only and (mode == "temporal_compare" or plan.past or temporal.anchor is not None)
    plan.about = not plan.predicates and bool(_ABOUT.search(text)) and bool(people)
    plan.episodes = mode in EPISODE_MODES
    return plan


def _live_sql(alias: str, live_status: str) -> str:
    """As of ``now`` (bound twice): current then = live now, or retired only after ``now``."""
    return f"({alias}.first_observed_at <= ? AND ({live_status} OR {alias}.retired_at > ?))"


class L2Recall:
    """L2 findings for a grounding plan. States are read from assertions, which know their TTLs, not from
    HAS_STATE edges (those only connect a state to its causes for graph spreading)."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.window: Window | None = None

    def findings(self, plan: Grounding, ctx: QueryContext, temporal: TemporalIntent,
                 anchor_at: float | None) -> list[Finding]:
        if not plan.subject_ids and not plan.episodes:
            return []
        self.window = temporal.window
        found: list[Finding] = []
        if plan.subject_ids:
            found += self._edges(plan, ctx)
            found += self._assertions(plan, ctx)
            if plan.about:
                found += self._snapshots(plan, ctx.now)
        if plan.episodes:
            found += self._episodes(ctx)
        kept = [f for f in found if self._in_time(f, temporal, anchor_at)]
        if plan.current_only:
            kept = [f for f in kept if f.status != "history"]
        elif not plan.history:
            kept = [f for f in kept if f.status != "history" or f.paths == ["l2_assertions"]]
        if plan.past:
            for f in kept:
                f.score *= 1.0 / HISTORY_FACTOR if f.status == "history" else HISTORY_FACTOR
        kept.sort(key=lambda f: -f.score)
        return self._dedupe(kept)[:MAX_FINDINGS]

    # ------------------------------------------------------------------ edges

    def _edges(self, plan: Grounding, ctx: QueryContext) -> list[Finding]:
        rows: dict[str, tuple[tuple, float]] = {}
        if plan.predicates:
            for row in graph.edges_with_predicates(self.conn, plan.subject_ids, sorted(plan.predicates), ctx.now,
                                                   MAX_EDGES):
                rows[row[0]] = (row, 1.0)
        if ctx.query_vector is not None:
            # Edge-semantic: the edges whose sentence is closest in meaning to the question.
            near = search.nearest_edges(self.conn, np.asarray(ctx.query_vector, dtype=np.float32).tobytes(), EDGE_KNN)
            close = {rowid: 1.0 - distance for rowid, distance in near        # None: a zero vector stored
                     if distance is not None and 1.0 - distance >= EDGE_SIMILARITY}
            if close:
                for row in graph.edges_by_rowid(self.conn, [*close], plan.subject_ids, ctx.now):
                    rows.setdefault(row[0], (row[:12], SEMANTIC_FACTOR * close[row[12]]))
        words = [stem(t) for t in ctx.terms if t.isascii() and len(t) > 2 or not t.isascii()]
        if words:
            for row in graph.edges_to_objects_like(self.conn, plan.subject_ids, [f"%{w.casefold()}%" for w in words],
                                                   ctx.now, MAX_EDGES):
                rows.setdefault(row[0], (row, TERM_MATCH_FACTOR))
            # One hop further: what the matched objects relate to ("why was I stressed" -> deadline CAUSED stressed).
            objects = sorted({row[11] for row, _ in rows.values()})
            if objects:
                for side in ("object_id", "subject_id"):   # two indexed lookups; an OR would scan every edge
                    for row in graph.edges_touching(self.conn, side, objects, plan.subject_ids, ctx.now, MAX_EDGES):
                        rows.setdefault(row[0], (row, HOP_FACTOR))
        out = []
        # What the user deleted is not history, it is wrong: it is never evidence, at any time.
        denied = graph.denied_edges(self.conn)
        for (tid, subject, predicate, obj, status, confidence, observations, first, last, retired, by, _), fit in \
                rows.values():
            if tid in denied and status != "active":
                continue
            current = status == "active" or (retired is not None and retired > ctx.now)
            verb = predicate.lower().replace("_", " ")
            if current:
                detail = f"current as of {iso(ctx.now)[:10]}; since {iso(first)[:10]}"
            else:
                replaced = self._edge_object(by) if by else None
                detail = f"history: until {iso(retired)[:10]}" + (f", replaced by {replaced}" if replaced else "")
            text = f"{subject} {verb} {obj} ({detail}; {observations} observation(s), confidence {confidence:.2f})"
            out.append(self._finding(f"edge:{tid}", "edge", tid, text, min(last, ctx.now),
                                     fit * confidence * (1.0 if current else HISTORY_FACTOR),
                                     "current" if current else "history", "l2_graph", ctx.now,
                                     # Whose edge it is: "Ana committed to falcon" is Ana's doing, not the user's.
                                     speaker=None if subject == SELF_NAME else subject))
        return out

    def _edge_object(self, tid: str) -> str | None:
        return graph.edge_object_name(self.conn, tid)

    # ------------------------------------------------------------- assertions

    def _assertions(self, plan: Grounding, ctx: QueryContext) -> list[Finding]:
        if not plan.traits:
            return []
        out = []
        for assertion_id, name, trait, value, status, confidence, first, last, expires, retired in \
                assertions.assertions_of(self.conn, plan.subject_ids, sorted(plan.traits), ctx.now, MAX_EDGES):
            live_then = status in LIVE or (retired is not None and retired > ctx.now)
            expired_then = expires is not None and expires <= ctx.now
            current = live_then and not expired_then
            if current:
                detail = f"current ({status}); since {iso(first)[:10]}"
                if expires is not None:
                    detail += f"; a passing state, lapses {iso(expires)[:16].replace('T', ' ')}"
            else:
                ended = expires if expired_then and (retired is None or expires < retired) else retired
                reason = "expired" if expired_then else status
                detail = f"history ({reason}" + (f" {iso(ended)[:10]}" if ended else "") + ")"
            said = f"{name}: {trait} = {value}" if expires is not None else f"{name} {trait.replace('_', ' ')} {value}"
            text = f"{said} ({detail}; confidence {confidence:.2f})"
            out.append(self._finding(f"assertion:{assertion_id}", "assertion", assertion_id, text, min(last, ctx.now),
                                     confidence * (1.05 if current else HISTORY_FACTOR),
                                     "current" if current else "history", "l2_assertions", ctx.now))
        return out

    def _snapshots(self, plan: Grounding, now: float) -> list[Finding]:
        """The current picture, only when nothing it is built from lies after ``now`` (it knows no past)."""
        out = []
        for entity_id in plan.subject_ids:
            row = assertions.snapshot(self.conn, entity_id)
            if row is None or self._evidence_after(entity_id, now):
                continue
            snap = json.loads(row[0])
            parts = [f"{t.replace('_', ' ')}: {', '.join(v['value'] for v in values)}"
                     for t, values in snap["traits"].items()]
            parts += [f"{t}: {s['value']}" for t, s in snap["states"].items()]
            if not parts:
                continue
            text = f"{snap['name']} — " + "; ".join(parts)
            evidence = self._evidence_of_entity(entity_id)
            out.append(Finding(layer=Layer.L2, text=text, occurred_at=row[1], source="l2", source_item_id=None,
                               session_id=None, author="memory", evidence_class="derived", score=0.9,
                               event_id=f"snapshot:{entity_id}", supporting_event_ids=[e[0] for e in evidence],
                               supporting_source_item_ids=[e[1] for e in evidence if e[1]], paths=["l2_snapshot"],
                               status="current"))
        return out

    def _evidence_after(self, entity_id: int, now: float) -> bool:
        return assertions.evidence_recorded_after(self.conn, entity_id, now)

    def _evidence_of_entity(self, entity_id: int) -> list[tuple[str, str | None]]:
        return assertions.live_evidence(self.conn, entity_id, LIVE)

    # --------------------------------------------------------------- episodes

    def _episodes(self, ctx: QueryContext) -> list[Finding]:
        words = [t for t in ctx.terms if not t.isascii() or len(t) > 2]
        window = None if ctx.window is None else (ctx.window.start, ctx.window.end)
        out = []
        found = store_episodes.promoted_episodes(self.conn, ctx.now, window, words, 5)
        for episode_id, title, start, end, count in found:
            text = (f"Episode {iso(start)[:16].replace('T', ' ')} – {iso(min(end, ctx.now))[:16].replace('T', ' ')}: "
                    f"\"{title}\" ({count} events)")
            out.append(self._finding(f"episode:{episode_id}", "episode", episode_id, text, min(end, ctx.now), 0.6,
                                     "history" if end < ctx.now - 86400 else "current", "l2_episodes", ctx.now))
        return out

    # ---------------------------------------------------------------- helpers

    def _finding(self, ref: str, kind: str, key, text: str, at: float, score: float, status: str, path: str,
                 now: float, speaker: str | None = None) -> Finding:
        # Only the evidence visible as of now, and inside the question's window if it has one.
        start, end = (self.window.start, self.window.end) if self.window is not None else (float("-inf"), now + 1)
        evidence = visible_evidence(self.conn, kind, str(key), now, start, end)
        return Finding(layer=Layer.L2, text=text, occurred_at=at, source="l2", source_item_id=None,
                       session_id=evidence[-1][3] if evidence else None, author="memory",
                       evidence_class=evidence[-1][2] if evidence else "derived", score=score, event_id=ref,
                       supporting_event_ids=[e[0] for e in evidence],
                       supporting_source_item_ids=[e[1] for e in evidence if e[1]], paths=[path], status=status,
                       speaker=speaker)

    @staticmethod
    def _in_time(finding: Finding, temporal: TemporalIntent, anchor_at: float | None) -> bool:
        if not finding.supporting_event_ids and not finding.event_id.startswith("snapshot:"):
            return False          # nothing visible as of now supports it
        if temporal.window is not None and finding.status == "history" and not temporal.window.contains(
                finding.occurred_at):
            return False
        if anchor_at is not None and temporal.anchor is not None:
            before = temporal.anchor.direction == "before"
            return finding.occurred_at < anchor_at if before else finding.occurred_at > anchor_at
        return True

    @staticmethod
    def _dedupe(findings: list[Finding]) -> list[Finding]:
        """An edge and the assertion it stated read alike ("the user lives in Jiaxing"): keep the better one."""
        seen: set[str] = set()
        kept = []
        for f in findings:
            key = f.text.split(" (", 1)[0].casefold()
            if key in seen:
                continue
            seen.add(key)
            kept.append(f)
        return kept


class L2Graph:
    """Graph spreading for L1 recall: seed events → their entities → active edges → events of the other end."""

    def spread(self, conn: Connection, ctx: QueryContext, seeds: Sequence[int]) -> list[int]:
        if not seeds:
            return []
        entities = store_entities.confident_entities_of_event_rowids(conn, seeds, SPREAD_MIN_CONFIDENCE)
        entities = selective_entities(conn, entities, ctx.now)
        if not entities:
            return []
        neighbours = graph.edge_neighbours(conn, entities, ctx.now, 20)
        others = [n for n, _ in neighbours if n not in set(entities)]
        if not others:
            return []
        rows = store_entities.events_of_entities(conn, others, l1.visible_filter(ctx.scopes, ctx.now, cold=ctx.cold),
                                                 ctx.fetch_k)
        seed_set = set(seeds)
        return [rowid for rowid in rows if rowid not in seed_set]
