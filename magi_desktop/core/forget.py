"""Forget (DESIGN §14): remove evidence everywhere, and what was derived from it, with a receipt.

Deleting an L1 event takes, through the schema's cascades and triggers, its full-text row, its
chunks and vectors, its queue jobs, its entity links and its L2 evidence; an L2 row left with no
evidence goes too (and what it had replaced is current again). Here, on top: every L3 summary
that cited a forgotten event is deleted (its text may quote it) and its windows are summarised
again on the next run from what remains; every fact whose message pointers (source, proposal,
acceptance) name a forgotten message is deleted, and an extraction's episode goes with the last of
its messages. Runtime traces (tool executions, audit records) matching the same criteria go too,
with the L4 executions learnt from them: the tool's counts drop by what they had added and its
strategy, which may quote them, is distilled again from what remains. The receipt counts what
each table lost.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .store.connection import Connection
from .store.entities import name_key

COUNTED = ("fact_events", "event_chunks", "embedding_jobs", "l2_projection_jobs", "l1_event_entities",
           "entity_mentions", "l2_evidence", "kg_edges", "tom_trait_assertions", "l2_episodes",
           "l3_summaries", "summary_event_links", "memory_facts", "chat_extraction", "fact_extractions",
           "runtime_traces", "l4_execution_traces", "procedural_skills")


def _targets(conn: Connection, event_ids, source_item_ids, entity, source, start, end) -> list[int]:
    where, args = _where("e.event_id", event_ids, source_item_ids, source, start, end)
    if entity:
        key = name_key(entity)
        where.append("e.id IN (SELECT l.event_rowid FROM l1_event_entities l JOIN entity_catalog c ON "
                     "c.entity_id = l.entity_id WHERE c.name_key = ? OR EXISTS (SELECT 1 FROM "
                     "json_each(c.aliases_json) a WHERE lower(a.value) = ?))")
        args += [key, key]
    if not where:
        raise ValueError("say what to forget: event ids, item ids, an entity, a source or a time range")
    return [r[0] for r in conn.execute(f"SELECT e.id FROM fact_events e WHERE {' AND '.join(where)}", args)]


def _trace_targets(conn: Connection, event_ids, source_item_ids, entity, source, start, end) -> list[int]:
    """Runtime traces under the same criteria (an entity names no trace: those are kept)."""
    if entity:
        return []
    where, args = _where("e.trace_id", event_ids, source_item_ids, source, start, end)
    return [r[0] for r in conn.execute(f"SELECT e.id FROM runtime_traces e WHERE {' AND '.join(where)}", args)]


def _where(id_column: str, event_ids, source_item_ids, source, start, end) -> tuple[list[str], list]:
    where, args = [], []
    if event_ids:
        where.append(f"{id_column} IN ({', '.join('?' * len(event_ids))})")
        args += list(event_ids)
    if source_item_ids:
        where.append(f"e.source_item_id IN ({', '.join('?' * len(source_item_ids))})")
        args += list(source_item_ids)
    if source:
        where.append("e.source = ?")
        args.append(source)
    if start is not None:
        where.append("e.timestamp >= ?")
        args.append(float(start))
    if end is not None:
        where.append("e.timestamp < ?")
        args.append(float(end))
    return where, args


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
    traces = _trace_targets(conn, event_ids, source_item_ids, entity, source, start, end)
    rows = conn.execute(f"SELECT event_id, source_item_id, session_id, source FROM fact_events WHERE id IN "
                        f"({', '.join('?' * len(rowids))})", rowids).fetchall() if rowids else []
    ids = [r[0] for r in rows]
    if rowids:
        marks = ", ".join("?" * len(rowids))
        # A fact names its message by event id, or by the chat item id it was given before it was stored.
        _forget_facts(conn, {r[0] for r in rows} | {r[1] for r in rows if r[1] and r[3] == "chat"})
        summaries = conn.execute(f"SELECT DISTINCT s.summary_id, s.summary_type, s.granularity, s.window_start FROM "
                                 f"summary_event_links l JOIN l3_summaries s ON s.summary_id = l.summary_id "
                                 f"WHERE l.event_rowid IN ({marks})", rowids).fetchall()
        # An extraction's episode and report may quote any of its messages: it goes when one does, and
        # the messages left are read again (what they still support is found, no more).
        extractions = [r[0] for r in conn.execute(f"SELECT DISTINCT extraction_id FROM chat_extraction WHERE "
                                                  f"event_rowid IN ({marks}) AND extraction_id IS NOT NULL", rowids)]
        conn.execute(f"DELETE FROM fact_events WHERE id IN ({marks})", rowids)
        conn.executemany("DELETE FROM fact_extractions WHERE extraction_id = ?", [(e,) for e in extractions])
        # A session with no message left starts again at generation 0: no retry state may carry over.
        conn.execute("DELETE FROM extraction_retries WHERE session_id NOT IN (SELECT session_id FROM chat_sessions)")
        for summary_id, _, _, _ in summaries:
            conn.execute("DELETE FROM l3_summaries WHERE summary_id = ?", (summary_id,))
        # Windows whose summary went are summarised again from what remains, on the next run.
        for granularity, start_at in {(g, w) for _, t, g, w in summaries if t == "temporal"}:
            conn.execute("UPDATE periodic_jobs SET done_until = min(done_until, ?) WHERE job = ?",
                         (start_at, f"l3:{granularity}"))
    if traces:
        _forget_traces(conn, traces)
    after = _counts(conn)
    removed = {table: before[table] - after[table] for table in before if before[table] != after[table]}
    receipt_id = conn.execute(
        "INSERT INTO forget_receipts (created_at, criteria_json, event_ids_json, counts_json) VALUES (?, ?, ?, ?)",
        (now, json.dumps(criteria), json.dumps(ids), json.dumps(removed))).lastrowid
    return {"receipt_id": receipt_id, "created_at": now, "criteria": criteria, "event_ids": ids, "removed": removed,
            "sessions": sorted({r[2] for r in rows if r[2]})}


def _forget_facts(conn: Connection, message_ids: set[str]) -> None:
    """Facts that point at a forgotten message hold its words or rest on them: they go, and so does
    every fact merged from one of them (its text holds theirs). What one of them had replaced or
    absorbed is current again — unless something later replaced that, or the user deleted it."""
    doomed: set[int] = set()
    ids = sorted(message_ids)
    for start in range(0, len(ids), 300):
        chunk = ids[start:start + 300]
        marks = ", ".join("?" * len(chunk))
        doomed |= {r[0] for r in conn.execute(
            f"SELECT fact_id FROM memory_facts WHERE source_message_id IN ({marks}) OR proposal_message_id IN "
            f"({marks}) OR accepting_message_id IN ({marks})", chunk * 3)}
    frontier = set(doomed)
    while frontier:
        marks = ", ".join("?" * len(frontier))
        frontier = {r[0] for r in conn.execute(
            f"SELECT superseded_by FROM memory_facts WHERE fact_id IN ({marks}) AND status = 'merged' "
            f"AND superseded_by IS NOT NULL", sorted(frontier))} - doomed
        doomed |= frontier
    if not doomed:
        return
    status = dict(conn.execute(f"SELECT fact_id, status FROM memory_facts WHERE fact_id IN "
                               f"({', '.join('?' * len(doomed))})", sorted(doomed)).fetchall())
    after = dict(conn.execute(f"SELECT fact_id, superseded_by FROM memory_facts WHERE fact_id IN "
                              f"({', '.join('?' * len(doomed))})", sorted(doomed)).fetchall())
    marks = ", ".join("?" * len(doomed))
    retired = conn.execute(f"SELECT fact_id, superseded_by FROM memory_facts WHERE superseded_by IN ({marks}) "
                           f"AND fact_id NOT IN ({marks})", sorted(doomed) * 2).fetchall()
    for fact_id, replaced_by in retired:
        # Follow what replaced it past the forgotten facts: the first survivor replaces it now; when
        # the chain ends in a forgotten fact that was current, it is current again; when the user had
        # deleted that one, it stays retired.
        last = replaced_by
        while after.get(last) in doomed:
            last = after[last]
        survivor = after.get(last)
        if survivor is not None:
            conn.execute("UPDATE memory_facts SET superseded_by = ? WHERE fact_id = ?", (survivor, fact_id))
        elif status[last] == "active":
            conn.execute("UPDATE memory_facts SET status = 'active', superseded_by = NULL WHERE fact_id = ?",
                         (fact_id,))
        else:
            conn.execute("UPDATE memory_facts SET superseded_by = NULL WHERE fact_id = ?", (fact_id,))
    conn.execute(f"DELETE FROM memory_facts WHERE fact_id IN ({marks})", sorted(doomed))


def _forget_traces(conn: Connection, traces: list[int]) -> None:
    """Runtime traces go with the L4 executions learnt from them; the tools' experience is re-derived."""
    marks = ", ".join("?" * len(traces))
    learnt = conn.execute(f"SELECT skill_id, count(*), sum(ok), sum(1 - ok) FROM l4_execution_traces "
                          f"WHERE runtime_id IN ({marks}) GROUP BY skill_id", traces).fetchall()
    conn.execute(f"DELETE FROM l4_execution_traces WHERE runtime_id IN ({marks})", traces)
    conn.execute(f"DELETE FROM runtime_traces WHERE id IN ({marks})", traces)
    for skill_id, runs, successes, failures in learnt:
        conn.execute(
            "UPDATE procedural_skills SET runs = max(0, runs - ?), successes = max(0, successes - ?), "
            "failures = max(0, failures - ?), mean_duration_ms = (SELECT avg(duration_ms) FROM l4_execution_traces "
            "WHERE skill_id = ?), strategy_json = NULL, optimized_prompt = NULL, distilled_at = NULL, "
            "distilled_by = NULL, distill_due = 1 WHERE skill_id = ?", (runs, successes, failures, skill_id, skill_id))
        conn.execute("DELETE FROM procedural_skills WHERE skill_id = ? AND runs = 0", (skill_id,))
