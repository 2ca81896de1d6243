"""``tom_snapshots``: the current picture of an entity, rebuilt from its live assertions and active edges."""

from __future__ import annotations

import json

from ..store import snapshots as store
from ..store.connection import Connection
from ..store.entities import entity_card
from .graph import LIVE

BATCH = 100
MAX_RELATIONS = 50


def build(conn: Connection, entity_id: int, now: float) -> dict | None:
    row = entity_card(conn, entity_id)
    if row is None:
        return None
    traits: dict[str, list[dict]] = {}
    states: dict[str, dict] = {}
    for trait, value, term, status, confidence, last, expires in store.live_assertion_rows(conn, entity_id, LIVE):
        if term == "short":
            if expires is not None and expires <= now:
                continue
            states.setdefault(trait, {"value": value, "since": last, "expires_at": expires})
        else:
            traits.setdefault(trait, []).append({"value": value, "status": status, "confidence": round(confidence, 3)})
    relations = [{"predicate": p, "object": o, "confidence": round(c, 3), "observations": n}
                 for p, o, c, n in store.active_relations(conn, entity_id, MAX_RELATIONS)]
    return {"entity_id": entity_id, "name": row[0], "entity_type": row[1], "aliases": json.loads(row[2]),
            "traits": traits, "states": states, "relations": relations}


def refresh_queued(conn: Connection, now: float, limit: int = BATCH) -> int:
    """Rebuild the snapshots of queued entities (in the caller's transaction); returns how many."""
    queued = store.queued_entities(conn, limit)
    for entity_id in queued:
        snapshot = build(conn, entity_id, now)
        if snapshot is not None:
            store.save_snapshot(conn, entity_id, json.dumps(snapshot, ensure_ascii=False), now)
        store.unqueue(conn, entity_id)
    return len(queued)
