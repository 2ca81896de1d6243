"""Periodic L2 upkeep (architecture §6): expire TTLs, settle episodes, merge split entities,
rewrite open predicates to core ones, repair edges of merged entities, drop orphans.

Each step is a plain function over the write connection; :func:`run` does them
all in one transaction so a crash leaves the previous state intact.
"""

from __future__ import annotations

import json

from ..store import assertions, entities, graph
from ..store.connection import Connection
from ..store.endings import move_endings
from ..store.entities import name_key
from ..store.evidence import copy_evidence, evidence_events, link_evidence
from ..store.snapshots import queue_snapshot
from . import episodes
from . import predicates as P
from .graph import LIVE, saturate, triple_id
from .resolve import COMPATIBLE, SELF_KEY


def expire_assertions(conn: Connection, now: float) -> int:
    rows = assertions.expiring(conn, now, LIVE)
    for assertion_id, entity_id in rows:
        assertions.expire(conn, assertion_id, now)
        queue_snapshot(conn, entity_id, now)
    return len(rows)


def merge_split_entities(conn: Connection, now: float) -> int:
    """One name under two compatible types ("Debussy" person and creator) becomes the older entity."""
    merged = 0
    rows = entities.split_entity_pairs(conn)
    gone: set[int] = set()
    for keep, keep_type, drop, drop_type in rows:
        if keep in gone or drop in gone or (keep_type, drop_type) not in COMPATIBLE:
            continue
        _absorb(conn, keep, drop, now)
        gone.add(drop)
        merged += 1
    return merged


def _absorb(conn: Connection, keep: int, drop: int, now: float) -> None:
    names = entities.name_and_aliases(conn, drop)
    aliases = json.loads(entities.entity_aliases_json(conn, keep))
    for alias in [names[0], *json.loads(names[1])]:
        if name_key(alias) not in {name_key(a) for a in aliases}:
            aliases.append(alias)
    entities.set_aliases(conn, keep, json.dumps(aliases, ensure_ascii=False), now)
    entities.merge_entity_rows(conn, keep, drop, now)
    for assertion_id, trait, value_key in assertions.live_assertion_values(conn, drop, LIVE):
        twin = assertions.live_twin(conn, keep, trait, value_key, LIVE)
        if twin is not None:
            copy_evidence(conn, "assertion", str(assertion_id), str(twin))
            assertions.supersede_by(conn, assertion_id, twin, now)
    assertions.move_assertions(conn, keep, drop, LIVE)
    queue_snapshot(conn, keep, now)   # its edges move in repair_edges, once for all merges


def rewrite_edge(conn: Connection, tid: str, subject_id: int, predicate: str, object_id: int) -> str:
    """Move an edge to a new (subject, predicate, object), merging into an existing triple; returns its id."""
    new_tid = triple_id(subject_id, predicate, object_id)
    if new_tid == tid:
        return tid
    old = graph.edge_for_rewrite(conn, tid)
    target = graph.edge_state(conn, new_tid)
    if target is None:
        names = entities.names_of(conn, subject_id, object_id)
        graph.add_rewritten_edge(conn, new_tid, subject_id, predicate, object_id, old,
                                 f"{names.get(subject_id, '?')} {predicate} {names.get(object_id, '?')}")
    else:
        graph.absorb_edge_counts(conn, new_tid, saturate(target[0], old[0]), old[1], old[2], old[3])
    for event_rowid in evidence_events(conn, "edge", tid):
        link_evidence(conn, "edge", new_tid, event_rowid)
    # One event behind both halves is one observation, not two.
    graph.recount_observations(conn, new_tid)
    graph.repoint_superseded_by(conn, tid, new_tid)
    assertions.repoint_edge(conn, tid, new_tid)
    move_endings(conn, tid, new_tid)     # the old rows go with the old edge
    graph.delete_edge(conn, tid)
    return new_tid


def repair_edges(conn: Connection, now: float) -> int:
    """Edges that point at a merged entity move to the entity that absorbed it."""
    rows = graph.edges_of_merged_entities(conn)
    for tid, _, subject, predicate, _, obj in rows:
        rewrite_edge(conn, tid, subject, predicate, obj)
    return len(rows)


def rewrite_open_predicates(conn: Connection) -> int:
    """An open predicate that the registry now knows as a synonym is rewritten to the core name."""
    rewritten = 0
    for tid, subject, predicate, obj in graph.edges_with_other_predicates(conn, sorted(P.CORE)):
        try:
            canonical = P.canonical(predicate)
        except P.PredicateRejected:
            continue
        if canonical != predicate:
            rewrite_edge(conn, tid, subject, canonical, obj)
            rewritten += 1
    return rewritten


def drop_orphans(conn: Connection, among: list[int] | None = None) -> int:
    """Active entities nothing refers to any more (their events were forgotten); ``among``: only these
    (forget drops the ones its chunk left alone at once, rather than at the next maintenance)."""
    if among is not None and not among:
        return 0
    return entities.drop_orphan_entities(conn, SELF_KEY, among)


def run(conn: Connection, now: float) -> dict[str, int]:
    report = {"expired": expire_assertions(conn, now), "entities_merged": merge_split_entities(conn, now),
              "edges_repaired": repair_edges(conn, now), "predicates_rewritten": rewrite_open_predicates(conn)}
    report.update(episodes.maintain(conn, now))
    report["orphans_dropped"] = drop_orphans(conn)
    return report
