"""Project a micro-batch of L1 events into L2 (architecture §6).

    read events → Phase 1 (entities, fact claims) → entity resolution →
    evidence gates → fast-track or Phase 2 labels → arbitration of reversals →
    one write transaction (entities, event links, mentions, edges, assertions,
    snapshot queue, episode, jobs done)

Every model call happens before the write, and every answer is checked
against its schema and against the batch (indexes, refs) first: a malformed
answer raises and the batch writes nothing; the queue retries it.

The gates are not the model's to decide: what an event may become follows
from its evidence class (governance POLICIES). An assistant reply yields
entities only; a sensor event yields behavioural edges only (a visit is
never a preference), and the user's only when nobody else is its actor;
only the user's own statements yield assertions.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..contracts import actor_of
from ..governance import POLICIES, EvidenceClass
from ..llm.base import LLMOutputInvalid, LLMProvider
from ..store import Database
from ..store import projection as store
from ..store.assertions import live_assertions_of_edge
from ..store.entities import EntityLinker, add_unbound_mention, link_event_entity, name_key
from ..store.evidence import link_evidence
from ..store.graph import newest_rival_edge, retire_edge
from ..store.snapshots import queue_snapshot
from . import endings, episodes, graph, jobs, review
from . import predicates as P
from .resolve import Resolved, Resolver
from .tasks import ARBITRATE, ENTITY_TYPES, PHASE1, PHASE2, SELF
from .traits import TRAITS, trait_for_state

log = logging.getLogger(__name__)

RECENT_TURNS = 3
RELATED_EVENTS = 3
RELATED_LOOKBACK_EVENTS = 2000   # the events before a batch searched first for its related events (store)
KNOWN_ENTITIES = 30
EXISTING_FACTS = 60
MENTION_CONFIDENCE = 0.5
# Base confidence of one observation, by evidence class.
BASE_CONFIDENCE = {"user_self_report": 0.7, "external_observation": 0.5}
CAUSAL_STATED = 0.6            # strength of a causal claim a model read without grading it
CAUSAL_WEAK = 0.2              # strength of a causal edge nobody stated
CAUSAL_WINDOW_SECONDS = 1800   # "just before" for a causal hypothesis
CAUSAL_MIN_LINK = 0.8


@dataclass
class _Event:
    rowid: int
    event_id: str
    timestamp: float
    content: str
    session_id: str | None
    author: str
    evidence_class: str
    event_type: str
    metadata: dict

    @property
    def policy(self):
        return POLICIES[EvidenceClass(self.evidence_class)]

    @property
    def speaker(self) -> str | None:
        return self.metadata.get("timeline", {}).get("speaker")

    @property
    def actor(self) -> str | None:
        """Who did what a sensor event records, when it was not the user (a colleague's commit)."""
        return actor_of(self.metadata.get("timeline", {}).get("provenance"))

    @property
    def unsettled(self) -> bool:
        """Labelled "Name:" by someone not yet known as a speaker (speakers.py): whose "I" it is waits."""
        timeline = self.metadata.get("timeline", {})
        return not timeline.get("speaker") and bool(timeline.get("speaker_candidate"))


@dataclass
class _Claim:
    index: int
    event: _Event
    subject: Resolved
    predicate: str
    obj: Resolved
    evidence_text: str
    previous_object: str | None
    confidence: float
    strength: float | None
    trait: tuple[str, str] | None           # (trait, value) the claim also asserts
    about_self: bool = False                # the subject is the speaker / the user
    label: str = "new"
    conflict_with: str | None = None
    conflict_type: str | None = None
    decision: str | None = None             # "evolve" | "keep_old" after arbitration


@dataclass
class ProjectionReport:
    events: int = 0
    entities: int = 0
    mentions: int = 0
    edges: int = 0
    assertions: int = 0
    superseded: int = 0
    llm_calls: int = 0
    fast_tracked: int = 0
    dropped: Counter = field(default_factory=Counter)

    def add(self, other: ProjectionReport) -> None:
        for name in ("events", "entities", "mentions", "edges", "assertions", "superseded", "llm_calls",
                     "fast_tracked"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.dropped.update(other.dropped)

    def to_dict(self) -> dict[str, Any]:
        return {"events": self.events, "entities": self.entities, "mentions": self.mentions, "edges": self.edges,
                "assertions": self.assertions, "superseded": self.superseded, "llm_calls": self.llm_calls,
                "fast_tracked": self.fast_tracked, "dropped": dict(self.dropped)}


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


class Projector:
    def __init__(self, db: Database, llm: LLMProvider, linker: EntityLinker, embed=None):
        self.db = db
        self.llm = llm
        self.linker = linker
        self.embed = embed

    # ------------------------------------------------------------------ run

    def project(self, rowids: list[int], now: float | None = None) -> ProjectionReport:
        now = time.time() if now is None else now
        conn = self.db.reader()
        events = self._load(conn, rowids)
        report = ProjectionReport(events=len(events))
        if not events:
            with self.db.transaction() as wconn:
                jobs.mark_done(wconn, rowids, now)
            return report
        resolver = Resolver(conn, self.llm, self.embed)
        answer = self._phase1(conn, events, report)
        mentions = self._resolve_entities(answer, events, resolver, report)
        claims = self._claims(answer, events, resolver, mentions, report)
        ended = self._endings(answer, events, resolver, report)
        existing = self._label(conn, claims, report)
        self._arbitrate(conn, claims, existing, report)
        report.llm_calls += resolver.llm_calls
        with self.db.transaction() as wconn:
            self._write(wconn, events, mentions, claims, report, now)
            retired, subjects = endings.apply(wconn, ended)
            report.superseded += retired
            for entity_id in subjects:
                queue_snapshot(wconn, entity_id, now)
            jobs.mark_done(wconn, rowids, now)
        return report

    def _load(self, conn, rowids: list[int]) -> list[_Event]:
        rows = store.events_to_project(conn, rowids)
        return [_Event(rowid, event_id, at, content, session, author, evidence, kind, json.loads(metadata))
                for rowid, event_id, at, content, session, author, evidence, kind, metadata in rows]

    # -------------------------------------------------------------- phase 1

    def _phase1(self, conn, events: list[_Event], report: ProjectionReport) -> dict[str, Any]:
        items = []
        for index, e in enumerate(events):
            policy = e.policy
            item: dict[str, Any] = {
                "index": index, "text": e.content, "speaker": e.speaker, "author": e.author,
                "evidence_class": e.evidence_class, "event_type": e.event_type, "occurred_at": _iso(e.timestamp),
                "graph": policy.graph,
                "hints": e.metadata.get("structured_entity_hints", []) if policy.entities else [],
            }
            timeline = e.metadata.get("timeline", {})
            if "activity" in timeline:
                item["activity"] = timeline["activity"]
                item["provenance"] = timeline.get("provenance", {})
            items.append(item)
        known = self._known_entities(conn, events)
        inputs = {
            "events": items,
            "recent_turns": self._recent_turns(conn, events[0]),
            "related_events": self._related_events(conn, events, known),
            "known_entities": [{"id": k[0], "name": k[1], "entity_type": k[2], "aliases": k[3]} for k in known],
            "entity_types": list(ENTITY_TYPES),
            "core_predicates": sorted(P.CORE),
        }
        report.llm_calls += 1
        answer = self.llm.run(PHASE1, inputs)
        n = len(events)
        for section in ("entities", "fact_claims", "resolved_refs"):
            for i, item in enumerate(answer.get(section, ())):
                if item["event_index"] >= n:
                    raise LLMOutputInvalid(f"{PHASE1.name}: $.{section}[{i}].event_index {item['event_index']} "
                                           f"is not an event of this batch (0..{n - 1})")
        return answer

    def _recent_turns(self, conn, first: _Event) -> list[str]:
        if first.session_id is None:
            return []
        rows = store.chat_turns_before(conn, first.session_id, first.timestamp, RECENT_TURNS)
        return [f"[{'ASSISTANT' if author == 'assistant' else 'USER'}] {text[:500]}" for author, text in reversed(rows)]

    def _known_entities(self, conn, events: list[_Event]) -> list[tuple[int, str, str, list]]:
        """Entities the batch names: by substring (INSTR over names, no regex to rebuild), and its links."""
        text = " ".join(e.content for e in events).casefold()
        ids = store.entities_named_in(conn, text, KNOWN_ENTITIES)
        ids.extend(store.entities_linked_to(conn, [e.rowid for e in events]))
        unique = list(dict.fromkeys(ids))[:KNOWN_ENTITIES]
        if not unique:
            return []
        rows = store.known_entity_rows(conn, unique)
        return [(r[0], r[1], r[2], json.loads(r[3])) for r in rows]

    def _related_events(self, conn, events: list[_Event], known) -> list[str]:
        if not known:
            return []
        sessions = sorted({e.session_id for e in events if e.session_id is not None})
        ids = [k[0] for k in known]
        return [text[:500] for text in store.related_event_texts(conn, ids, events[0].timestamp, sessions,
                                                                 RELATED_EVENTS, RELATED_LOOKBACK_EVENTS)]

    # ----------------------------------------------------------- resolution

    def _resolve_entities(self, answer, events, resolver: Resolver, report) -> list[tuple[int, Resolved | None, dict]]:
        """(event index, resolved entity or None for a mention-only, the raw item) per Phase 1 entity."""
        out = []
        for item in answer.get("entities", ()):
            event = events[item["event_index"]]
            if not event.policy.entities:
                report.dropped["entity_not_allowed"] += 1
                continue
            resolved = resolver.resolve(item["name"], item.get("entity_type"), item.get("resolved_id"),
                                        item.get("confidence", 1.0))
            out.append((item["event_index"], resolved, item))
        return out

    def _claims(self, answer, events: list[_Event], resolver: Resolver, mentions, report) -> list[_Claim]:
        types: dict[str, str | None] = {}
        for _, resolved, item in mentions:
            if resolved is not None:
                types.setdefault(name_key(item["name"]), item.get("entity_type"))
        refs = {(r["event_index"], name_key(r["mention"])): r["refers_to"] for r in answer.get("resolved_refs", ())}
        claims = []
        for i, raw in enumerate(answer.get("fact_claims", ())):
            if raw.get("ended"):
                continue    # a fact that stopped: _endings
            event = events[raw["event_index"]]
            policy = event.policy
            if raw["subject"] == SELF and event.unsettled:
                report.dropped["speaker_not_settled"] += 1
                continue
            try:
                predicate = P.canonical(raw["predicate"])
            except P.PredicateRejected:
                report.dropped["low_value_predicate"] += 1
                continue
            if policy.graph == "none":
                report.dropped[f"no_graph_from_{event.evidence_class}"] += 1
                continue
            if policy.graph == "behavioural" and not P.is_behavioural(predicate):
                report.dropped["sensor_claim_not_behavioural"] += 1
                continue
            if policy.graph == "all" and P.is_behavioural(predicate):
                report.dropped["behavioural_claim_not_from_sensor"] += 1
                continue
            if raw["subject"] == SELF and event.actor is not None:
                report.dropped["someone_elses_activity"] += 1     # "Ana committed …" is never the user's doing
                continue
            spec = P.spec(predicate)
            subject = self._party(raw["subject"], event, resolver, refs, types, "thing", raw["event_index"])
            stated_type = raw.get("object_type") or types.get(name_key(raw["object"]))
            obj = self._party(raw["object"], event, resolver, refs, {},
                              stated_type or (spec.object_type if spec else "thing"), raw["event_index"],
                              guessed_type=stated_type is None)
            if subject is None or obj is None:
                report.dropped["unresolved_party"] += 1
                continue
            trait = None
            if policy.user_assertions and raw["subject"] == SELF:
                if predicate == "HAS_STATE":
                    trait = trait_for_state(raw["object"])
                elif spec and spec.trait:
                    trait = (spec.trait, obj.name)
            strength = raw.get("strength")
            if predicate in ("CAUSED", "LED_TO") and strength is None:
                strength = CAUSAL_STATED
            claims.append(_Claim(
                index=i, event=event, subject=subject, predicate=predicate, obj=obj,
                evidence_text=raw["evidence_text"], previous_object=raw.get("previous_object"),
                confidence=raw.get("confidence", 1.0) * BASE_CONFIDENCE.get(event.evidence_class, 0.5),
                strength=strength, trait=trait, about_self=raw["subject"] == SELF))
        return claims

    def _endings(self, answer, events: list[_Event], resolver: Resolver, report) -> list[endings.Ending]:
        """The claims that a fact of the speaker's stopped ("I quit my job at Acme"): only from testimony
        that may state the user's facts, only about the speaker (endings.py)."""
        found = []
        for raw in answer.get("fact_claims", ()):
            if not raw.get("ended"):
                continue
            event = events[raw["event_index"]]
            try:
                predicate = P.canonical(raw["predicate"])
            except P.PredicateRejected:
                report.dropped["low_value_predicate"] += 1
                continue
            if raw["subject"] != SELF or event.policy.graph != "all" or not event.policy.user_assertions:
                report.dropped["ending_not_the_speakers"] += 1
                continue
            if event.unsettled:
                report.dropped["speaker_not_settled"] += 1
                continue
            subject = resolver.self_entity(event.speaker)
            found.append(endings.Ending(event.rowid, event.timestamp, subject.entity_id, predicate,
                                        endings.object_key(raw["object"])))
        return found

    def _party(self, name: str, event: _Event, resolver: Resolver, refs, types, default_type: str, index: int,
               guessed_type: bool = False):
        if name == SELF:
            return resolver.self_entity(event.speaker)
        name = refs.get((index, name_key(name)), name)
        stated = types.get(name_key(name))
        return resolver.resolve(name, stated or default_type, guessed_type=guessed_type and not stated)

    # ------------------------------------------------------------- phase 2

    def _existing(self, conn, claims: list[_Claim]) -> list[dict[str, Any]]:
        """Active edges of the claims' subjects in the claims' predicate families (and their antonyms)."""
        subjects = sorted({c.subject.entity_id for c in claims if c.subject.entity_id is not None})
        if not subjects:
            return []
        related: set[str] = set()
        for c in claims:
            family = P.family(c.predicate)
            related |= {name for name, spec in P.CORE.items() if spec.family == family} | {c.predicate}
            spec = P.spec(c.predicate)
            if spec and spec.antonym:
                related.add(spec.antonym)
        rows = store.active_edges_of(conn, subjects, sorted(related), EXISTING_FACTS)
        return [{"ref": f"edge:{r[0]}", "subject_id": r[1], "subject": r[2], "predicate": r[3], "object_id": r[4],
                 "object": r[5], "status": r[6], "last_observed_at": r[7]} for r in rows]

    def _label(self, conn, claims: list[_Claim], report: ProjectionReport) -> dict[str, dict]:
        """Fast-track what needs no judgement; ask Phase 2 about the rest. Returns the existing facts by ref."""
        slow = [c for c in claims if not (c.subject.entity_id is not None and c.obj.entity_id is not None
                                          and (spec := P.spec(c.predicate)) is not None and not spec.single_valued
                                          and c.trait is None)]
        report.fast_tracked += len(claims) - len(slow)
        if not slow:
            return {}
        existing = {e["ref"]: e for e in self._existing(conn, slow)}
        if not existing:
            return existing  # nothing to compare with: every claim is new
        report.llm_calls += 1
        answer = self.llm.run(PHASE2, {
            "claims": [{"index": c.index, "subject": c.subject.name, "subject_id": c.subject.entity_id,
                        "predicate": c.predicate, "object": c.obj.name, "object_id": c.obj.entity_id,
                        "previous_object": c.previous_object, "evidence_text": c.evidence_text,
                        "observed_at": c.event.timestamp} for c in slow],
            "existing": list(existing.values()),
        })
        by_index = {c.index: c for c in slow}
        for i, label in enumerate(answer["labels"]):
            claim = by_index.get(label["claim_index"])
            if claim is None:
                raise LLMOutputInvalid(f"{PHASE2.name}: $.labels[{i}].claim_index {label['claim_index']} is not "
                                       "one of the claims asked about")
            ref = label.get("conflict_with")
            if ref is not None and ref not in existing:
                raise LLMOutputInvalid(f"{PHASE2.name}: $.labels[{i}].conflict_with {ref!r} is not an existing fact")
            claim.label, claim.conflict_with, claim.conflict_type = label["label"], ref, label.get("conflict_type")
        return existing

    def _arbitrate(self, conn, claims: list[_Claim], existing: dict[str, dict], report: ProjectionReport) -> None:
        for claim in claims:
            # Safety net: a single-valued fact with a different live value is a conflict even if unlabelled.
            spec = P.spec(claim.predicate)
            if claim.conflict_with is None and spec and spec.single_valued:
                rival = next((e for e in existing.values() if e["subject_id"] == claim.subject.entity_id
                              and e["predicate"] == claim.predicate and e["object_id"] != claim.obj.entity_id), None)
                if rival is not None:
                    claim.label, claim.conflict_with = "contradicts", rival["ref"]
                    claim.conflict_type = "state_reversal"
            if claim.label not in ("contradicts", "evolves") or claim.conflict_with is None:
                continue
            if claim.conflict_type == "antonym":
                claim.decision = "evolve"   # a rule: the newer of two antonyms wins
                continue
            old = existing[claim.conflict_with]
            evidence = [text[:300] for text in store.edge_evidence_texts(conn, old["ref"].split(":", 1)[1], 3)]
            report.llm_calls += 1
            answer = self.llm.run(ARBITRATE, {
                "conflict_type": claim.conflict_type,
                "old": {**{k: old[k] for k in ("ref", "subject", "predicate", "object", "last_observed_at")},
                        "evidence": evidence},
                "new": {"subject": claim.subject.name, "predicate": claim.predicate, "object": claim.obj.name,
                        "previous_object": claim.previous_object, "evidence_text": claim.evidence_text,
                        "observed_at": claim.event.timestamp},
            })
            claim.decision = answer["decision"]

    # ----------------------------------------------------------------- write

    def _causal_hypotheses(self, conn, claims: list[_Claim], report: ProjectionReport) -> None:
        """A state with no stated cause: what happened just before, in the same domain, may have led to it.

        Only a weak hypothesis (architecture §6): LED_TO with strength 0.2, citing both events.
        An explicit "because" already made a strong CAUSED edge and needs none.
        """
        explained = {c.event.rowid for c in claims if c.predicate in ("CAUSED", "LED_TO")}
        for claim in claims:
            if claim.predicate != "HAS_STATE" or claim.event.rowid in explained or claim.obj.entity_id is None:
                continue
            event = claim.event
            row = store.possible_cause(conn, event.rowid, event.timestamp, CAUSAL_WINDOW_SECONDS, event.session_id,
                                       CAUSAL_MIN_LINK)
            if row is None:
                continue
            earlier, cause_id, cause_name = row
            tid = graph.write_edge(conn, (cause_id, cause_name), "LED_TO", (claim.obj.entity_id, claim.obj.name),
                                   event_rowid=event.rowid, observed_at=event.timestamp,
                                   confidence=CAUSAL_WEAK, strength=CAUSAL_WEAK)
            link_evidence(conn, "edge", tid, earlier)
            report.edges += 1

    def _write(self, conn, events, mentions, claims: list[_Claim], report: ProjectionReport, now: float) -> None:
        touched: set[int] = set()
        for index, resolved, item in mentions:
            event = events[index]
            if resolved is None:
                add_unbound_mention(conn, event.rowid, item["name"], name_key(item["name"]), item.get("entity_type"),
                                    item.get("confidence", 1.0), now)
                report.mentions += 1
                continue
            created = resolved.entity_id is None
            entity_id = graph.ensure_entity(conn, resolved, now)
            report.entities += created
            link_event_entity(conn, event.rowid, entity_id, resolved.entity_type, item.get("confidence", 1.0))
        for claim in claims:
            if claim.decision == "keep_old":
                report.dropped["kept_old_fact"] += 1
                continue
            subject_id = graph.ensure_entity(conn, claim.subject, now)
            object_id = graph.ensure_entity(conn, claim.obj, now)
            if not claim.about_self:
                # The speaker is linked at ingest; "the user" is in every claim and would make
                # every event a neighbour of every other in entity expansion.
                link_event_entity(conn, claim.event.rowid, subject_id, claim.subject.entity_type, 1.0)
            link_event_entity(conn, claim.event.rowid, object_id, claim.obj.entity_type, 0.8)
            predicate = graph.family_predicate(conn, subject_id, claim.predicate, object_id)
            spec = P.spec(predicate)
            if spec and spec.single_valued and claim.decision is None:
                # Checked again inside the transaction: an earlier claim of this batch (or a fact
                # Phase 2 was not shown) may hold another value. The newer statement wins.
                rival = newest_rival_edge(conn, subject_id, predicate, object_id)
                if rival is not None:
                    if rival[1] > claim.event.timestamp:
                        report.dropped["older_than_current_fact"] += 1
                        continue
                    claim.decision, claim.conflict_with = "evolve", f"edge:{rival[0]}"
                    claim.conflict_type = "state_reversal"
            if review.is_denied(conn, "edge", graph.triple_id(subject_id, predicate, object_id), claim.event.rowid) or (
                    claim.trait is not None and review.is_denied(
                        conn, "assertion",
                        review.assertion_denial_key(subject_id, claim.trait[0], name_key(claim.trait[1])),
                        claim.event.rowid)):
                report.dropped["user_denied"] += 1      # the user deleted it after this evidence was stored
                continue
            tid = graph.write_edge(conn, (subject_id, claim.subject.name), predicate, (object_id, claim.obj.name),
                                   event_rowid=claim.event.rowid, observed_at=claim.event.timestamp,
                                   confidence=claim.confidence, strength=claim.strength)
            report.edges += 1
            replaced: list[int] = []
            if claim.decision == "evolve" and claim.conflict_with:
                old_tid = claim.conflict_with.split(":", 1)[1]
                if old_tid != tid:
                    reason = "antonym" if claim.conflict_type == "antonym" else "evolved"
                    retire_edge(conn, old_tid, replaced_by=tid, reason=reason, now=claim.event.timestamp)
                    report.superseded += 1
                    replaced = live_assertions_of_edge(conn, old_tid, graph.LIVE)
            if claim.trait is not None:
                trait_name, value = claim.trait
                trait = TRAITS[trait_name]
                if trait.term == "short" and trait.single_valued:
                    live = graph.live_assertions(conn, subject_id, trait_name)
                    if any(key != name_key(value) and seen > claim.event.timestamp for _, key, seen in live):
                        report.dropped["older_than_current_state"] += 1   # a late batch: the newer state stands
                        touched.add(subject_id)
                        continue
                    replaced += [aid for aid, key, _ in live if key != name_key(value)]
                retire = "overwritten" if trait.term == "short" else "superseded"
                graph.write_assertion(conn, subject_id, trait_name, value, event_rowid=claim.event.rowid,
                                      observed_at=claim.event.timestamp, confidence=claim.confidence,
                                      replaces=replaced, retire_reason=retire, tid=tid)
                report.assertions += 1
            touched.add(subject_id)
        self._causal_hypotheses(conn, claims, report)
        for entity_id in touched:
            queue_snapshot(conn, entity_id, now)
        episodes.extend_candidate(conn, events, now)
