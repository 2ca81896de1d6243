"""Writing L2 rows: entities, edges and assertions, each tied to its evidence events.

All functions take the open write transaction's connection; the projection
calls them only after every model answer of a batch has been checked, so a
batch is written whole or not at all.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

from ..store.connection import Connection
from ..store.entities import name_key
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


def link_evidence(conn: Connection, kind: str, key: str | int, event_rowid: int) -> bool:
    """Tie a row to an event; False if it already was (a retried batch must not count twice)."""
    return conn.execute("INSERT OR IGNORE INTO l2_evidence (kind, row_key, event_rowid) VALUES (?, ?, ?)",
                        (kind, str(key), event_rowid)).rowcount == 1


def ensure_entity(conn: Connection, entity: Resolved, now: float) -> int:
    """The id of a resolved mention, creating the entity or adding an alias as needed."""
    if entity.entity_id is None:
        key, kind = entity.key
        conn.execute("INSERT OR IGNORE INTO entity_catalog (name, name_key, entity_type, created_at, updated_at) "
                     "VALUES (?, ?, ?, ?, ?)", (entity.name, key, kind, now, now))
        entity.entity_id = conn.execute("SELECT entity_id FROM entity_catalog WHERE name_key = ? AND entity_type = ?",
                                        (key, kind)).fetchone()[0]
    if entity.alias:
        row = conn.execute("SELECT aliases_json FROM entity_catalog WHERE entity_id = ?",
                           (entity.entity_id,)).fetchone()
        aliases = json.loads(row[0])
        if name_key(entity.alias) not in {name_key(a) for a in aliases}:
            conn.execute("UPDATE entity_catalog SET aliases_json = ?, updated_at = ? WHERE entity_id = ?",
                         (json.dumps([*aliases, entity.alias], ensure_ascii=False), now, entity.entity_id))
        entity.alias = None
    return entity.entity_id


def link_event_entity(conn: Connection, event_rowid: int, entity_id: int, entity_type: str, confidence: float) -> None:
    conn.execute(
        "INSERT INTO l1_event_entities (event_rowid, entity_id, entity_type, confidence) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (event_rowid, entity_id) DO UPDATE SET confidence = max(confidence, excluded.confidence)",
        (event_rowid, entity_id, entity_type, confidence))


def family_predicate(conn: Connection, subject_id: int, predicate: str, object_id: int) -> str:
    """The predicate an active edge of the same family between the same pair already uses, else ``predicate``.

    "Likes jazz" then "interested in jazz" is one preference, not two relations.
    """
    if P.family(predicate) not in P.REUSABLE_FAMILIES:
        return predicate
    kin = [name for name, spec in P.CORE.items() if spec.family == P.family(predicate) and name != predicate]
    if not kin:
        return predicate
    marks = ", ".join("?" * len(kin))
    row = conn.execute(f"SELECT predicate FROM kg_edges WHERE subject_id = ? AND object_id = ? AND status = 'active' "
                       f"AND predicate IN ({marks}) ORDER BY first_observed_at LIMIT 1",
                       (subject_id, object_id, *kin)).fetchone()
    return row[0] if row else predicate


def write_edge(conn: Connection, subject: tuple[int, str], predicate: str, obj: tuple[int, str], *,
               event_rowid: int, observed_at: float, confidence: float, strength: float | None = None) -> str:
    """Insert or merge the edge; returns its triple id."""
    tid = triple_id(subject[0], predicate, obj[0])
    row = conn.execute("SELECT confidence, status, retired_at FROM kg_edges WHERE triple_id = ?", (tid,)).fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO kg_edges (triple_id, subject_id, predicate, object_id, confidence, first_observed_at, "
            "last_observed_at, strength, edge_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (tid, subject[0], predicate, obj[0], min(confidence, CONFIDENCE_CAP), observed_at, observed_at, strength,
             f"{subject[1]} {predicate} {obj[1]}"))
        link_evidence(conn, "edge", tid, event_rowid)
        return tid
    if link_evidence(conn, "edge", tid, event_rowid):
        conn.execute(
            "UPDATE kg_edges SET observations = observations + 1, confidence = ?, "
            "first_observed_at = min(first_observed_at, ?), last_observed_at = max(last_observed_at, ?), "
            "strength = CASE WHEN ? IS NULL THEN strength ELSE max(coalesce(strength, 0), ?) END WHERE triple_id = ?",
            (saturate(row[0], confidence), observed_at, observed_at, strength, strength, tid))
    # Only an observation from after its retirement revives it: the evidence it had before
    # (a batch run again) is what it was replaced in spite of.
    if row[1] != "active" and (row[2] is None or observed_at > row[2]):
        # Observed again after it was replaced ("moved back to Shanghai"): current once more.
        conn.execute("UPDATE kg_edges SET status = 'active', superseded_by = NULL, retired_at = NULL, "
                     "retired_reason = NULL, last_observed_at = max(last_observed_at, ?) WHERE triple_id = ?",
                     (observed_at, tid))
    return tid


def retire_edge(conn: Connection, tid: str, *, replaced_by: str | None, reason: str, now: float) -> None:
    """Retire a live edge: superseded by ``replaced_by`` when it evolved, else retired (an antonym, an ending)."""
    status = "superseded" if reason == "evolved" else "retired"
    conn.execute("UPDATE kg_edges SET status = ?, superseded_by = ?, retired_at = ?, retired_reason = ? "
                 "WHERE triple_id = ? AND status = 'active'", (status, replaced_by, now, reason, tid))


def live_assertions(conn: Connection, entity_id: int, trait: str) -> list[tuple[int, str, float]]:
    """(assertion_id, value_key, last_observed_at) of the live rows of a trait."""
    return conn.execute(f"SELECT assertion_id, value_key, last_observed_at FROM tom_trait_assertions "
                        f"WHERE entity_id = ? AND trait = ? AND status IN {LIVE}", (entity_id, trait)).fetchall()


def write_assertion(conn: Connection, entity_id: int, trait_name: str, value: str, *, event_rowid: int,
                    observed_at: float, confidence: float, replaces: Sequence[int] = (),
                    retire_reason: str = "superseded", tid: str | None = None) -> int:
    """Merge into the live row of the same value, or add a row (retiring ``replaces`` in its favour)."""
    trait = TRAITS[trait_name]
    key = name_key(value)
    expires = observed_at + trait.ttl_seconds if trait.ttl_seconds else None
    row = conn.execute(
        f"SELECT assertion_id, confidence, first_observed_at, expires_at FROM tom_trait_assertions WHERE entity_id = ? "
        f"AND trait = ? AND value_key = ? AND status IN {LIVE}", (entity_id, trait_name, key)).fetchone()
    if row is not None and row[3] is not None and row[3] < observed_at:
        # The state had lapsed before this new observation (maintenance had not swept it yet):
        # it stays as history and the state starts again, rather than stretching over the gap.
        conn.execute("UPDATE tom_trait_assertions SET status = 'expired', retired_at = expires_at "
                     "WHERE assertion_id = ?", (row[0],))
        row = None
    if row is not None:
        assertion_id = row[0]
        if link_evidence(conn, "assertion", assertion_id, event_rowid):
            evidence = conn.execute("SELECT count(*) FROM l2_evidence WHERE kind = 'assertion' AND row_key = ?",
                                    (str(assertion_id),)).fetchone()[0]
            span = max(observed_at, row[2]) - min(observed_at, row[2])
            status = "tentative" if evidence < 2 else (
                "stable" if evidence >= STABLE_OBSERVATIONS and span >= STABLE_AFTER_SECONDS else "corroborated")
            conn.execute(
                "UPDATE tom_trait_assertions SET observations = observations + 1, confidence = ?, "
                "last_observed_at = max(last_observed_at, ?), first_observed_at = min(first_observed_at, ?), "
                "expires_at = CASE WHEN ? IS NULL THEN expires_at ELSE max(coalesce(expires_at, 0), ?) END, "
                "status = CASE status WHEN 'stable' THEN 'stable' ELSE ? END WHERE assertion_id = ?",
                (saturate(row[1], confidence), observed_at, observed_at, expires, expires, status, assertion_id))
        return assertion_id
    earlier = conn.execute(
        "SELECT a.assertion_id FROM tom_trait_assertions a JOIN l2_evidence v ON v.kind = 'assertion' "
        "AND v.row_key = CAST(a.assertion_id AS TEXT) WHERE a.entity_id = ? AND a.trait = ? AND a.value_key = ? "
        "AND v.event_rowid = ?", (entity_id, trait_name, key, event_rowid)).fetchone()
    if earlier is not None:
        # This very event already stated it, and the row was replaced or retired since: a batch run
        # again does not bring it back.
        return earlier[0]
    cursor = conn.execute(
        "INSERT INTO tom_trait_assertions (entity_id, trait, value, value_key, term, status, confidence, "
        "first_observed_at, last_observed_at, expires_at, replaces, triple_id) "
        "VALUES (?, ?, ?, ?, ?, 'tentative', ?, ?, ?, ?, ?, ?)",
        (entity_id, trait_name, value, key, trait.term, min(confidence, CONFIDENCE_CAP), observed_at, observed_at,
         expires, replaces[0] if replaces else None, tid))
    assertion_id = cursor.lastrowid
    link_evidence(conn, "assertion", assertion_id, event_rowid)
    for old in replaces:
        conn.execute(f"UPDATE tom_trait_assertions SET status = ?, superseded_by = ?, retired_at = ? "
                     f"WHERE assertion_id = ? AND status IN {LIVE}", (retire_reason, assertion_id, observed_at, old))
    return assertion_id


def queue_snapshot(conn: Connection, entity_id: int, now: float) -> None:
    conn.execute("INSERT OR REPLACE INTO snapshot_refresh_queue (entity_id, enqueued_at) VALUES (?, ?)",
                 (entity_id, now))
