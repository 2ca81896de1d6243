"""Forget (architecture §14): remove evidence everywhere, and what was derived from it.

Deleting an L1 event takes, through the schema's cascades and triggers, its full-text row, its
chunks and vectors, its queue jobs, its entity links and its L2 evidence; an L2 row left with no
evidence goes too (and what it had replaced is current again). Here, on top: every L3 summary
that cited a forgotten event, or whose window held one, is deleted (its text may quote it or name
it among the window's topics) and its windows are summarised again on the next run from what
remains; every fact whose message pointers (source, proposal,
acceptance) name a forgotten message is deleted, and an extraction's episode goes with the last of
its messages; the snapshots that listed what went are rebuilt and the entities left with nothing
are dropped, in the same transaction. Runtime traces (tool executions, audit records) matching the
same criteria go too, with the L4 executions learnt from them: the tool's counts drop by what they
had added and its strategy, which may quote them, is distilled again from what remains. An entity
forgotten by name goes with its aliases, edges, assertions and snapshot.

Each function here works on one chunk inside the caller's write transaction and leaves the memory
consistent — nothing derived cites a row that is gone — so a job (:mod:`.forget_job`) can run them
in short transactions and stop anywhere. Each returns what every table lost.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from .errors import InvalidInput
from .l2 import endings, episodes, snapshots
from .l2.maintenance import drop_orphans
from .store.connection import Connection
from .store.entities import name_key
from .store.generations import note_events_deleted
from .store.summaries import redraw_citing

COUNTED = ("fact_events", "event_chunks", "embedding_jobs", "l2_projection_jobs", "l1_event_entities",
           "entity_mentions", "l2_evidence", "kg_edges", "tom_trait_assertions", "l2_episodes",
           "l3_summaries", "summary_event_links", "memory_facts", "chat_extraction", "fact_extractions",
           "runtime_traces", "l4_execution_traces", "procedural_skills", "entity_catalog", "tom_snapshots")


@dataclass
class Targets:
    """The rows a forget request names, found when it is made (rowids: the job stores them, not names)."""

    events: list[int] = field(default_factory=list)
    traces: list[int] = field(default_factory=list)
    entities: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.events or self.traces or self.entities)


def find_targets(conn: Connection, *, event_ids=None, source_item_ids=None, entity: str | None = None,
                 source: str | None = None, start: float | None = None, end: float | None = None) -> Targets:
    """What the criteria (combined with AND) name now. ``ValueError`` when they name nothing at all."""
    where, args = _where("e.event_id", event_ids, source_item_ids, source, start, end)
    entities: list[int] = []
    if entity:
        entities = _entities_named(conn, entity)
        marks = ", ".join("?" * len(entities)) or "NULL"
        where.append(f"(e.id IN (SELECT event_rowid FROM l1_event_entities WHERE entity_id IN ({marks})) OR "
                     f"e.id IN (SELECT event_rowid FROM entity_mentions WHERE name_key = ? OR entity_id IN ({marks})))")
        args += [*entities, name_key(entity), *entities]
    if not where:
        raise InvalidInput("say what to forget: event ids, item ids, an entity, a source or a time range")
    events = [r[0] for r in conn.execute(f"SELECT e.id FROM fact_events e WHERE {' AND '.join(where)} ORDER BY e.id",
                                         args)]
    traces: list[int] = []
    if not entity:      # an entity names no trace: those are kept
        where, args = _where("e.trace_id", event_ids, source_item_ids, source, start, end)
        traces = [r[0] for r in conn.execute(f"SELECT e.id FROM runtime_traces e WHERE {' AND '.join(where)} "
                                             f"ORDER BY e.id", args)]
    # Forgetting by entity AND something else narrows the events; the entity itself goes only when asked alone.
    alone = entity and not (event_ids or source_item_ids or source or start is not None or end is not None)
    return Targets(events, traces, entities if alone else [])


def _entities_named(conn: Connection, name: str) -> list[int]:
    """The entities called ``name`` (any case) or with it as an alias, and those merged into them."""
    key = name_key(name)
    found = {r[0] for r in conn.execute(
        "SELECT entity_id FROM entity_catalog c WHERE c.name_key = ? OR EXISTS (SELECT 1 FROM "
        "json_each(c.aliases_json) a WHERE lower(a.value) = ?)", (key, key))}
    frontier = set(found)
    while frontier:
        marks = ", ".join("?" * len(frontier))
        frontier = {r[0] for r in conn.execute(f"SELECT entity_id FROM entity_catalog WHERE merged_into IN ({marks})",
                                               sorted(frontier))} - found
        found |= frontier
    return sorted(found)


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
    # chunk_vectors holds one row per event_chunks row (a trigger deletes it with its chunk); counting the
    # vec0 table itself reads all of its chunks.
    counts["chunk_vectors"] = counts["event_chunks"]
    return counts


def _removed(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {table: before[table] - after[table] for table in before if before[table] > after[table]}


@dataclass
class Removed:
    """What one chunk removed: rows per table, and the chat sessions whose working memory must end."""

    counts: dict[str, int] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)


def forget_events(conn: Connection, rowids: Sequence[int], now: float | None = None) -> Removed:
    """Inside the caller's write transaction: remove these L1 events and what depends on them."""
    now = time.time() if now is None else now
    rowids = list(rowids)
    before = _counts(conn)
    marks = ", ".join("?" * len(rowids))
    rows = conn.execute(f"SELECT event_id, source_item_id, session_id, source FROM fact_events WHERE id IN ({marks})",
                        rowids).fetchall() if rowids else []
    if not rows:
        return Removed()
    # A fact names its message by event id, or by the chat item id it was given before it was stored.
    _forget_facts(conn, {r[0] for r in rows} | {r[1] for r in rows if r[1] and r[3] == "chat"})
    # Every summary that cites a forgotten event or was drawn over a window holding one goes (its topics and
    # "Mentioned" come from all the window's events), and its window is summarised again from what remains.
    redraw_citing(conn, rowids)
    # An extraction's episode and report may quote any of its messages: it goes when one does, and
    # the messages left are read again (what they still support is found, no more).
    extractions = [r[0] for r in conn.execute(f"SELECT DISTINCT extraction_id FROM chat_extraction WHERE "
                                              f"event_rowid IN ({marks}) AND extraction_id IS NOT NULL", rowids)]
    touched = _entities_touched(conn, rowids, marks)
    ended = endings.ended_by(conn, rowids)
    conn.execute(f"DELETE FROM fact_events WHERE id IN ({marks})", rowids)
    endings.reinstate(conn, ended)   # "I quit Acme" forgotten: Acme is current again
    note_events_deleted(conn)   # a summary drawn from these events meanwhile is not written (l3/jobs.py)
    episodes.upkeep(conn)       # once per episode that lost events, not once per event (the trigger queues)
    conn.executemany("DELETE FROM fact_extractions WHERE extraction_id = ?", [(e,) for e in extractions])
    # A session with no message left starts again at generation 0: no retry state may carry over.
    conn.execute("DELETE FROM extraction_retries WHERE session_id NOT IN (SELECT session_id FROM chat_sessions)")
    _settle_entities(conn, touched, now)
    return Removed(_removed(before, _counts(conn)), {r[2] for r in rows if r[2]})


def _entities_touched(conn: Connection, rowids: list[int], marks: str) -> list[int]:
    """The entities these events link to, mention, or support an edge or assertion of."""
    return sorted({r[0] for r in conn.execute(
        f"SELECT entity_id FROM l1_event_entities WHERE event_rowid IN ({marks}) "
        f"UNION SELECT entity_id FROM entity_mentions WHERE event_rowid IN ({marks}) AND entity_id IS NOT NULL "
        f"UNION SELECT k.subject_id FROM l2_evidence v JOIN kg_edges k ON k.triple_id = v.row_key "
        f"WHERE v.kind = 'edge' AND v.event_rowid IN ({marks}) "
        f"UNION SELECT k.object_id FROM l2_evidence v JOIN kg_edges k ON k.triple_id = v.row_key "
        f"WHERE v.kind = 'edge' AND v.event_rowid IN ({marks}) "
        f"UNION SELECT a.entity_id FROM l2_evidence v JOIN tom_trait_assertions a ON "
        f"a.assertion_id = CAST(v.row_key AS INTEGER) WHERE v.kind = 'assertion' AND v.event_rowid IN ({marks})",
        rowids * 5)})


def _settle_entities(conn: Connection, touched: list[int], now: float) -> None:
    """At once, not at the next maintenance: entities left with nothing go (their name was the forgotten
    words), and the snapshots that listed what went are rebuilt."""
    drop_orphans(conn, among=touched)
    while snapshots.refresh_queued(conn, now):
        pass


def forget_traces(conn: Connection, rowids: Sequence[int]) -> Removed:
    """Inside the caller's write transaction: remove these runtime traces and what L4 learnt from them."""
    rowids = list(rowids)
    if not rowids:
        return Removed()
    before = _counts(conn)
    _forget_traces(conn, rowids)
    return Removed(_removed(before, _counts(conn)))


def forget_entities(conn: Connection, entity_ids: Sequence[int], now: float | None = None) -> Removed:
    """Inside the caller's write transaction: remove these entities (forgotten by name) with their aliases,
    mentions, edges, assertions and snapshot; the snapshots of others that listed them are rebuilt."""
    now = time.time() if now is None else now
    ids = [r[0] for r in conn.execute(f"SELECT entity_id FROM entity_catalog WHERE entity_id IN "
                                      f"({', '.join('?' * len(entity_ids))})", list(entity_ids))] if entity_ids else []
    if not ids:
        return Removed()
    before = _counts(conn)
    marks = ", ".join("?" * len(ids))
    neighbours = [r[0] for r in conn.execute(
        f"SELECT subject_id FROM kg_edges WHERE object_id IN ({marks}) UNION SELECT object_id FROM kg_edges "
        f"WHERE subject_id IN ({marks})", ids * 2)]
    conn.execute(f"DELETE FROM kg_edges WHERE subject_id IN ({marks}) OR object_id IN ({marks})", ids * 2)
    conn.execute(f"DELETE FROM tom_trait_assertions WHERE entity_id IN ({marks})", ids)
    conn.execute(f"DELETE FROM entity_mentions WHERE entity_id IN ({marks})", ids)
    conn.execute(f"UPDATE entity_catalog SET merged_into = NULL WHERE merged_into IN ({marks})", ids)
    conn.execute(f"DELETE FROM entity_catalog WHERE entity_id IN ({marks})", ids)
    survivors = sorted(set(neighbours) - set(ids))
    conn.executemany("INSERT OR IGNORE INTO snapshot_refresh_queue (entity_id, enqueued_at) VALUES (?, 0)",
                     [(e,) for e in survivors])
    _settle_entities(conn, survivors, now)
    return Removed(_removed(before, _counts(conn)))


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
