"""Writing L2 rows: entities, edges and assertions, each tied to its evidence events.

All functions take the open write transaction's connection; the projection
calls them only after every model answer of a batch has been checked, so a
batch is written whole or not at all. What is decided (merge or add, how sure, revive, replace) is
here; the statements are in ``core/store`` (entities, graph, assertions, evidence).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

from ..store import assertions, entities
from ..store import graph as store
from ..store.connection import Connection
from ..store.entities import name_key
from ..store.evidence import evidence_count, link_evidence
from . import predicates as P
from .constants import LIVE
from .resolve import Resolved
from .traits import TRAITS

TRIPLE_NAMESPACE = uuid.UUID("6f1c9a52-3b0e-5d8e-9a43-2f7c1e0b5d17")
CONFIDENCE_CAP = 0.95          # repetition raises confidence, never to certainty
INDEPENDENT_WEIGHT = 0.5       # how much one more independent observation closes the gap to 1
STABLE_OBSERVATIONS = 3
STABLE_AFTER_SECONDS = 7 * 86400


def triple_id(subject_id: int, predicate: str, object_id: int) -> str:
    return str(uuid.uuid5(TRIPLE_NAMESPACE, f"{subject_id}:{predicate}:{object_id}"))


def saturate(confidence: float, added: float) -> float:
    """Cumulative confidence: each independent confirmation closes part of the gap to 1, up to the cap."""
    return min(CONFIDENCE_CAP, 1.0 - (1.0 - confidence) * (1.0 - added * INDEPENDENT_WEIGHT))


def ensure_entity(conn: Connection, entity: Resolved, now: float) -> int:
    """The id of a resolved mention, creating the entity or adding an alias as needed."""
    if entity.entity_id is None:
        key, kind = entity.key
        entity.entity_id = entities.add_entity(conn, entity.name, key, kind, now)
    if entity.alias:
        aliases = json.loads(entities.entity_aliases_json(conn, entity.entity_id))
        if name_key(entity.alias) not in {name_key(a) for a in aliases}:
            entities.set_aliases(conn, entity.entity_id, json.dumps([*aliases, entity.alias], ensure_ascii=False),
                                 now)
        entity.alias = None
    return entity.entity_id


def family_predicate(conn: Connection, subject_id: int, predicate: str, object_id: int) -> str:
    """The predicate an active edge of the same family between the same pair already uses, else ``predicate``.

    "Likes jazz" then "interested in jazz" is one preference, not two relations.
    """
    if P.family(predicate) not in P.REUSABLE_FAMILIES:
        return predicate
    kin = [name for name, spec in P.CORE.items() if spec.family == P.family(predicate) and name != predicate]
    if not kin:
        return predicate
    kept = store.active_predicate_between(conn, subject_id, object_id, kin)
    return kept if kept is not None else predicate


def write_edge(conn: Connection, subject: tuple[int, str], predicate: str, obj: tuple[int, str], *,
               event_rowid: int, observed_at: float, confidence: float, strength: float | None = None) -> str:
    """Insert or merge the edge; returns its triple id."""
    tid = triple_id(subject[0], predicate, obj[0])
    row = store.edge_state(conn, tid)
    if row is None:
        store.add_edge(conn, tid, subject[0], predicate, obj[0], min(confidence, CONFIDENCE_CAP), observed_at,
                       strength, f"{subject[1]} {predicate} {obj[1]}")
        link_evidence(conn, "edge", tid, event_rowid)
        return tid
    if link_evidence(conn, "edge", tid, event_rowid):
        store.observe_edge_again(conn, tid, saturate(row[0], confidence), observed_at, strength)
    # Only an observation from after its retirement revives it: the evidence it had before
    # (a batch run again) is what it was replaced in spite of.
    if row[1] != "active" and (row[2] is None or observed_at > row[2]):
        # Observed again after it was replaced ("moved back to Shanghai"): current once more.
        store.revive_edge(conn, tid, observed_at)
    return tid


def live_assertions(conn: Connection, entity_id: int, trait: str) -> list[tuple[int, str, float]]:
    """(assertion_id, value_key, last_observed_at) of the live rows of a trait."""
    return assertions.live_assertion_keys(conn, entity_id, trait, LIVE)


def write_assertion(conn: Connection, entity_id: int, trait_name: str, value: str, *, event_rowid: int,
                    observed_at: float, confidence: float, replaces: Sequence[int] = (),
                    retire_reason: str = "superseded", tid: str | None = None) -> int:
    """Merge into the live row of the same value, or add a row (retiring ``replaces`` in its favour)."""
    trait = TRAITS[trait_name]
    key = name_key(value)
    expires = observed_at + trait.ttl_seconds if trait.ttl_seconds else None
    row = assertions.live_assertion_of_value(conn, entity_id, trait_name, key, LIVE)
    if row is not None and row[3] is not None and row[3] < observed_at:
        # The state had lapsed before this new observation (maintenance had not swept it yet):
        # it stays as history and the state starts again, rather than stretching over the gap.
        assertions.expire_at_its_time(conn, row[0])
        row = None
    if row is not None:
        assertion_id = row[0]
        if link_evidence(conn, "assertion", assertion_id, event_rowid):
            evidence = evidence_count(conn, "assertion", str(assertion_id))
            span = max(observed_at, row[2]) - min(observed_at, row[2])
            status = "tentative" if evidence < 2 else (
                "stable" if evidence >= STABLE_OBSERVATIONS and span >= STABLE_AFTER_SECONDS else "corroborated")
            assertions.observe_assertion_again(conn, assertion_id, saturate(row[1], confidence), observed_at,
                                               expires, status)
        return assertion_id
    earlier = assertions.assertion_stated_by(conn, entity_id, trait_name, key, event_rowid)
    if earlier is not None:
        # This very event already stated it, and the row was replaced or retired since: a batch run
        # again does not bring it back.
        return earlier
    assertion_id = assertions.add_assertion(conn, entity_id, trait_name, value, key, trait.term,
                                            min(confidence, CONFIDENCE_CAP), observed_at, expires,
                                            replaces[0] if replaces else None, tid)
    link_evidence(conn, "assertion", assertion_id, event_rowid)
    for old in replaces:
        assertions.replace_assertion(conn, old, by=assertion_id, status=retire_reason, now=observed_at, live=LIVE)
    return assertion_id
