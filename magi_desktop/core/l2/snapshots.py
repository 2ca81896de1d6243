"""``tom_snapshots``: the current picture of an entity, rebuilt from its live assertions and active edges."""

from __future__ import annotations

import json

from ..store.connection import Connection
from .graph import LIVE

BATCH = 100
MAX_RELATIONS = 50


def build(conn: Connection, entity_id: int, now: float) -> dict | None:
    row = conn.execute("SELECT name, entity_type, aliases_json FROM entity_catalog WHERE entity_id = ?",
                       (entity_id,)).fetchone()
    if row is None:
        return None
    traits: dict[str, list[dict]] = {}
    states: dict[str, dict] = {}
    for trait, value, term, status, confidence, last, expires in conn.execute(
            f"SELECT trait, value, term, status, confidence, last_observed_at, expires_at FROM tom_trait_assertions "
            f"WHERE entity_id = ? AND status IN {LIVE} ORDER BY last_observed_at DESC", (entity_id,)):
        if term == "short":
            if expires is not None and expires <= now:
                continue
            states.setdefault(trait, {"value": value, "since": last, "expires_at": expires})
        else:
            traits.setdefault(trait, []).append({"value": value, "status": status, "confidence": round(confidence, 3)})
    relations = [{"predicate": p, "object": o, "confidence": round(c, 3), "observations": n}
                 for p, o, c, n in conn.execute(
                     "SELECT k.predicate, e.name, k.confidence, k.observations FROM kg_edges k JOIN entity_catalog e "
                     "ON e.entity_id = k.object_id WHERE k.subject_id = ? AND k.status = 'active' "
                     "ORDER BY k.confidence DESC, k.last_observed_at DESC LIMIT ?", (entity_id, MAX_RELATIONS))]
    return {"entity_id": entity_id, "name": row[0], "entity_type": row[1], "aliases": json.loads(row[2]),
            "traits": traits, "states": states, "relations": relations}


def refresh_queued(conn: Connection, now: float, limit: int = BATCH) -> int:
    """Rebuild the snapshots of queued entities (in the caller's transaction); returns how many."""
    queued = [r[0] for r in conn.execute("SELECT entity_id FROM snapshot_refresh_queue ORDER BY enqueued_at LIMIT ?",
                                         (limit,))]
    for entity_id in queued:
        snapshot = build(conn, entity_id, now)
        if snapshot is not None:
            conn.execute("INSERT OR REPLACE INTO tom_snapshots (entity_id, snapshot_json, refreshed_at) "
                         "VALUES (?, ?, ?)", (entity_id, json.dumps(snapshot, ensure_ascii=False), now))
        conn.execute("DELETE FROM snapshot_refresh_queue WHERE entity_id = ?", (entity_id,))
    return len(queued)
