"""Periodic L2 upkeep (architecture §6): expire TTLs, settle episodes, merge split entities,
rewrite open predicates to core ones, repair edges of merged entities, drop orphans.

Each step is a plain function over the write connection; :func:`run` does them
all in one transaction so a crash leaves the previous state intact.
"""

from __future__ import annotations

import json

from ..store.connection import Connection
from ..store.entities import name_key
from ..store.evidence import link_evidence
from ..store.snapshots import queue_snapshot
from . import episodes
from . import predicates as P
from .graph import LIVE, saturate, triple_id
from .resolve import COMPATIBLE, SELF_KEY


def expire_assertions(conn: Connection, now: float) -> int:
    rows = conn.execute(f"SELECT assertion_id, entity_id FROM tom_trait_assertions WHERE expires_at IS NOT NULL "
                        f"AND expires_at <= ? AND status IN {LIVE}", (now,)).fetchall()
    for assertion_id, entity_id in rows:
        conn.execute("UPDATE tom_trait_assertions SET status = 'expired', retired_at = ? WHERE assertion_id = ?",
                     (now, assertion_id))
        queue_snapshot(conn, entity_id, now)
    return len(rows)


def merge_split_entities(conn: Connection, now: float) -> int:
    """One name under two compatible types ("Debussy" person and creator) becomes the older entity."""
    merged = 0
    rows = conn.execute("SELECT a.entity_id, a.entity_type, b.entity_id, b.entity_type FROM entity_catalog a "
                        "JOIN entity_catalog b ON a.name_key = b.name_key AND a.entity_id < b.entity_id "
                        "WHERE a.status = 'active' AND b.status = 'active'").fetchall()
    gone: set[int] = set()
    for keep, keep_type, drop, drop_type in rows:
        if keep in gone or drop in gone or (keep_type, drop_type) not in COMPATIBLE:
            continue
        _absorb(conn, keep, drop, now)
        gone.add(drop)
        merged += 1
    return merged


def _absorb(conn: Connection, keep: int, drop: int, now: float) -> None:
    names = conn.execute("SELECT name, aliases_json FROM entity_catalog WHERE entity_id = ?", (drop,)).fetchone()
    aliases = json.loads(conn.execute("SELECT aliases_json FROM entity_catalog WHERE entity_id = ?",
                                      (keep,)).fetchone()[0])
    for alias in [names[0], *json.loads(names[1])]:
        if name_key(alias) not in {name_key(a) for a in aliases}:
            aliases.append(alias)
    conn.execute("UPDATE entity_catalog SET aliases_json = ?, updated_at = ? WHERE entity_id = ?",
                 (json.dumps(aliases, ensure_ascii=False), now, keep))
    conn.execute("UPDATE entity_catalog SET status = 'merged', merged_into = ?, updated_at = ? WHERE entity_id = ?",
                 (keep, now, drop))
    conn.execute("INSERT OR IGNORE INTO l1_event_entities (event_rowid, entity_id, entity_type, confidence) "
                 "SELECT event_rowid, ?, entity_type, confidence FROM l1_event_entities WHERE entity_id = ?",
                 (keep, drop))
    conn.execute("DELETE FROM l1_event_entities WHERE entity_id = ?", (drop,))
    conn.execute("UPDATE entity_mentions SET entity_id = ? WHERE entity_id = ?", (keep, drop))
    for assertion_id, trait, value_key in conn.execute(
            f"SELECT assertion_id, trait, value_key FROM tom_trait_assertions WHERE entity_id = ? AND status IN {LIVE}",
            (drop,)).fetchall():
        twin = conn.execute(f"SELECT assertion_id FROM tom_trait_assertions WHERE entity_id = ? AND trait = ? "
                            f"AND value_key = ? AND status IN {LIVE}", (keep, trait, value_key)).fetchone()
        if twin:
            conn.execute("INSERT OR IGNORE INTO l2_evidence (kind, row_key, event_rowid) SELECT 'assertion', ?, "
                         "event_rowid FROM l2_evidence WHERE kind = 'assertion' AND row_key = ?",
                         (str(twin[0]), str(assertion_id)))
            conn.execute("UPDATE tom_trait_assertions SET status = 'superseded', superseded_by = ?, retired_at = ? "
                         "WHERE assertion_id = ?", (twin[0], now, assertion_id))
    conn.execute(f"UPDATE tom_trait_assertions SET entity_id = ? WHERE entity_id = ? AND status IN {LIVE}",
                 (keep, drop))
    conn.execute("UPDATE tom_trait_assertions SET entity_id = ? WHERE entity_id = ?", (keep, drop))
    queue_snapshot(conn, keep, now)   # its edges move in repair_edges, once for all merges


def rewrite_edge(conn: Connection, tid: str, subject_id: int, predicate: str, object_id: int) -> str:
    """Move an edge to a new (subject, predicate, object), merging into an existing triple; returns its id."""
    new_tid = triple_id(subject_id, predicate, object_id)
    if new_tid == tid:
        return tid
    old = conn.execute("SELECT confidence, observations, first_observed_at, last_observed_at, status, edge_text, "
                       "retired_at, retired_reason FROM kg_edges WHERE triple_id = ?", (tid,)).fetchone()
    target = conn.execute("SELECT confidence FROM kg_edges WHERE triple_id = ?", (new_tid,)).fetchone()
    if target is None:
        names = dict(conn.execute("SELECT entity_id, name FROM entity_catalog WHERE entity_id IN (?, ?)",
                                  (subject_id, object_id)).fetchall())
        conn.execute(
            "INSERT INTO kg_edges (triple_id, subject_id, predicate, object_id, status, confidence, observations, "
            "first_observed_at, last_observed_at, edge_text, retired_at, retired_reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (new_tid, subject_id, predicate, object_id, old[4], old[0], old[1], old[2], old[3],
             f"{names.get(subject_id, '?')} {predicate} {names.get(object_id, '?')}", old[6], old[7]))
    else:
        conn.execute("UPDATE kg_edges SET confidence = ?, observations = observations + ?, "
                     "first_observed_at = min(first_observed_at, ?), last_observed_at = max(last_observed_at, ?) "
                     "WHERE triple_id = ?", (saturate(target[0], old[0]), old[1], old[2], old[3], new_tid))
    for (event_rowid,) in conn.execute("SELECT event_rowid FROM l2_evidence WHERE kind = 'edge' AND row_key = ?",
                                       (tid,)).fetchall():
        link_evidence(conn, "edge", new_tid, event_rowid)
    # One event behind both halves is one observation, not two.
    conn.execute("UPDATE kg_edges SET observations = (SELECT count(*) FROM l2_evidence WHERE kind = 'edge' "
                 "AND row_key = ?) WHERE triple_id = ?", (new_tid, new_tid))
    conn.execute("UPDATE kg_edges SET superseded_by = ? WHERE superseded_by = ?", (new_tid, tid))
    conn.execute("UPDATE tom_trait_assertions SET triple_id = ? WHERE triple_id = ?", (new_tid, tid))
    conn.execute("INSERT OR IGNORE INTO l2_endings (triple_id, event_rowid, ended_at) SELECT ?, event_rowid, ended_at "
                 "FROM l2_endings WHERE triple_id = ?", (new_tid, tid))     # the old rows go with the old edge
    conn.execute("DELETE FROM kg_edges WHERE triple_id = ?", (tid,))
    conn.execute("DELETE FROM l2_evidence WHERE kind = 'edge' AND row_key = ?", (tid,))
    return new_tid


def repair_edges(conn: Connection, now: float) -> int:
    """Edges that point at a merged entity move to the entity that absorbed it."""
    rows = conn.execute(
        "SELECT k.triple_id, k.subject_id, coalesce(s.merged_into, k.subject_id), k.predicate, k.object_id, "
        "coalesce(o.merged_into, k.object_id) FROM kg_edges k JOIN entity_catalog s ON s.entity_id = k.subject_id "
        "JOIN entity_catalog o ON o.entity_id = k.object_id "
        "WHERE s.status = 'merged' OR o.status = 'merged'").fetchall()
    for tid, _, subject, predicate, _, obj in rows:
        rewrite_edge(conn, tid, subject, predicate, obj)
    return len(rows)


def rewrite_open_predicates(conn: Connection) -> int:
    """An open predicate that the registry now knows as a synonym is rewritten to the core name."""
    rewritten = 0
    core = sorted(P.CORE)
    for tid, subject, predicate, obj in conn.execute(
            f"SELECT triple_id, subject_id, predicate, object_id FROM kg_edges "
            f"WHERE predicate NOT IN ({', '.join('?' * len(core))})", core).fetchall():
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
    only, args = "", list[str | int]([SELF_KEY])
    if among is not None:
        if not among:
            return 0
        only = f"AND entity_id IN ({', '.join('?' * len(among))}) "
        args += list(among)
    return conn.execute(
        "DELETE FROM entity_catalog WHERE status = 'active' AND name_key != ? " + only +
        "AND NOT EXISTS (SELECT 1 FROM l1_event_entities l WHERE l.entity_id = entity_catalog.entity_id) "
        "AND NOT EXISTS (SELECT 1 FROM kg_edges k WHERE k.subject_id = entity_catalog.entity_id "
        "                OR k.object_id = entity_catalog.entity_id) "
        "AND NOT EXISTS (SELECT 1 FROM tom_trait_assertions a WHERE a.entity_id = entity_catalog.entity_id) "
        "AND NOT EXISTS (SELECT 1 FROM entity_catalog m WHERE m.merged_into = entity_catalog.entity_id)",
        args).rowcount


def run(conn: Connection, now: float) -> dict[str, int]:
    report = {"expired": expire_assertions(conn, now), "entities_merged": merge_split_entities(conn, now),
              "edges_repaired": repair_edges(conn, now), "predicates_rewritten": rewrite_open_predicates(conn)}
    report.update(episodes.maintain(conn, now))
    report["orphans_dropped"] = drop_orphans(conn)
    return report
