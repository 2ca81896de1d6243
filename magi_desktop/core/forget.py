"""Forget (DESIGN §14): remove evidence everywhere, and what was derived from it, with a receipt.

Deleting an L1 event takes, through the schema's cascades and triggers, its full-text row, its
chunks and vectors, its queue jobs, its entity links and its L2 evidence; an L2 row left with no
evidence goes too (and what it had replaced is current again). Here, on top: every L3 summary
that cited a forgotten event is deleted (its text may quote it) and its windows are summarised
again on the next run from what remains. The receipt counts what each table lost.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .store.connection import Connection
from .store.entities import name_key

COUNTED = ("fact_events", "event_chunks", "embedding_jobs", "l2_projection_jobs", "l1_event_entities",
           "entity_mentions", "l2_evidence", "kg_edges", "tom_trait_assertions", "l2_episodes",
           "l3_summaries", "summary_event_links")


def _targets(conn: Connection, event_ids, source_item_ids, entity, source, start, end) -> list[int]:
    where, args = [], []
    if event_ids:
        where.append(f"e.event_id IN ({', '.join('?' * len(event_ids))})")
        args += list(event_ids)
    if source_item_ids:
        where.append(f"e.source_item_id IN ({', '.join('?' * len(source_item_ids))})")
        args += list(source_item_ids)
    if entity:
        key = name_key(entity)
        where.append("e.id IN (SELECT l.event_rowid FROM l1_event_entities l JOIN entity_catalog c ON "
                     "c.entity_id = l.entity_id WHERE c.name_key = ? OR EXISTS (SELECT 1 FROM "
                     "json_each(c.aliases_json) a WHERE lower(a.value) = ?))")
        args += [key, key]
    if source:
        where.append("e.source = ?")
        args.append(source)
    if start is not None:
        where.append("e.timestamp >= ?")
        args.append(float(start))
    if end is not None:
        where.append("e.timestamp < ?")
        args.append(float(end))
    if not where:
        raise ValueError("say what to forget: event ids, item ids, an entity, a source or a time range")
    return [r[0] for r in conn.execute(f"SELECT e.id FROM fact_events e WHERE {' AND '.join(where)}", args)]


def _counts(conn: Connection) -> dict[str, int]:
    counts = {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in COUNTED}
    counts["chunk_vectors"] = conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0] if conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = 'chunk_vectors'").fetchone() else 0
    return counts


def forget(conn: Connection, *, event_ids=None, source_item_ids=None, entity: str | None = None,
           source: str | None = None, start: float | None = None, end: float | None = None,
           now: float | None = None) -> dict[str, Any]:
    """Inside the caller's write transaction: remove the matching events and what depends on them."""
    now = time.time() if now is None else now
    rowids = _targets(conn, event_ids, source_item_ids, entity, source, start, end)
    criteria = {k: v for k, v in {"event_ids": list(event_ids or []), "source_item_ids": list(source_item_ids or []),
                                  "entity": entity, "source": source, "start": start, "end": end}.items() if v}
    before = _counts(conn)
    ids = [r[0] for r in conn.execute(
        f"SELECT event_id FROM fact_events WHERE id IN ({', '.join('?' * len(rowids))})", rowids)] if rowids else []
    if rowids:
        marks = ", ".join("?" * len(rowids))
        summaries = conn.execute(f"SELECT DISTINCT s.summary_id, s.summary_type, s.granularity, s.window_start FROM "
                                 f"summary_event_links l JOIN l3_summaries s ON s.summary_id = l.summary_id "
                                 f"WHERE l.event_rowid IN ({marks})", rowids).fetchall()
        conn.execute(f"DELETE FROM fact_events WHERE id IN ({marks})", rowids)
        for summary_id, _, _, _ in summaries:
            conn.execute("DELETE FROM l3_summaries WHERE summary_id = ?", (summary_id,))
        # Windows whose summary went are summarised again from what remains, on the next run.
        for granularity, start_at in {(g, w) for _, t, g, w in summaries if t == "temporal"}:
            conn.execute("UPDATE periodic_jobs SET done_until = min(done_until, ?) WHERE job = ?",
                         (start_at, f"l3:{granularity}"))
    after = _counts(conn)
    removed = {table: before[table] - after[table] for table in before if before[table] != after[table]}
    receipt_id = conn.execute(
        "INSERT INTO forget_receipts (created_at, criteria_json, event_ids_json, counts_json) VALUES (?, ?, ?, ?)",
        (now, json.dumps(criteria), json.dumps(ids), json.dumps(removed))).lastrowid
    return {"receipt_id": receipt_id, "created_at": now, "criteria": criteria, "event_ids": ids, "removed": removed}
