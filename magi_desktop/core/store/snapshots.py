"""Theory-of-mind snapshots (``tom_snapshots``) and the queue of entities whose snapshot is to be rebuilt
(``snapshot_refresh_queue``): the L2 worker's writes and the reads a rebuild makes (``core/l2/snapshots.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .connection import Connection


def queue_snapshot(conn: Connection, entity_id: int, now: float) -> None:
    """Queue an entity's snapshot to be rebuilt (once: a later queueing moves it back)."""
    conn.execute("INSERT OR REPLACE INTO snapshot_refresh_queue (entity_id, enqueued_at) VALUES (?, ?)",
                 (entity_id, now))


def queued_entities(conn: Connection, limit: int) -> list[int]:
    """The entities queued for a snapshot, first queued first."""
    return [r[0] for r in conn.execute("SELECT entity_id FROM snapshot_refresh_queue ORDER BY enqueued_at LIMIT ?",
                                       (limit,))]


def save_snapshot(conn: Connection, entity_id: int, snapshot_json: str, now: float) -> None:
    conn.execute("INSERT OR REPLACE INTO tom_snapshots (entity_id, snapshot_json, refreshed_at) "
                 "VALUES (?, ?, ?)", (entity_id, snapshot_json, now))


def unqueue(conn: Connection, entity_id: int) -> None:
    conn.execute("DELETE FROM snapshot_refresh_queue WHERE entity_id = ?", (entity_id,))


def live_assertion_rows(conn: Connection, entity_id: int, live: Sequence[str]) -> list[tuple[Any, ...]]:
    """(trait, value, term, status, confidence, last_observed_at, expires_at) of an entity's assertions whose
    status is one of ``live``, last observed first."""
    return conn.execute(
        f"SELECT trait, value, term, status, confidence, last_observed_at, expires_at FROM tom_trait_assertions "
        f"WHERE entity_id = ? AND status IN {tuple(live)} ORDER BY last_observed_at DESC", (entity_id,)).fetchall()


def active_relations(conn: Connection, entity_id: int, limit: int) -> list[tuple[str, str, float, int]]:
    """(predicate, object name, confidence, observations) of an entity's active edges, most confident first."""
    return conn.execute(
        "SELECT k.predicate, e.name, k.confidence, k.observations FROM kg_edges k JOIN entity_catalog e "
        "ON e.entity_id = k.object_id WHERE k.subject_id = ? AND k.status = 'active' "
        "ORDER BY k.confidence DESC, k.last_observed_at DESC LIMIT ?", (entity_id, limit)).fetchall()
