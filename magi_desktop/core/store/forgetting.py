"""The queries of forget (architecture §14, :mod:`..forget`): finding what a request names, and removing an
L1 event, a runtime trace or an entity with what only it carried — across the tables it touches (events,
facts, extractions, the graph, L4 executions), because removing them together is the whole point of the path.

Plain functions over a connection inside the caller's write transaction; each runs the statements in the
order the caller relies on (a cascade or trigger of one is what the next one reads).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .connection import Connection, placeholders

_FACT_LOOKUP_CHUNK = 300        # message ids per query: three IN lists of them stay under SQLite's limit


# ------------------------------------------------------------------ what a request names


def _criteria(id_column: str, event_ids: Sequence[str] | None, source_item_ids: Sequence[str] | None,
              source: str | None, start: float | None, end: float | None) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    if event_ids:
        where.append(f"{id_column} IN ({placeholders(len(event_ids))})")
        args += list(event_ids)
    if source_item_ids:
        where.append(f"e.source_item_id IN ({placeholders(len(source_item_ids))})")
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


def event_rowids_matching(conn: Connection, *, event_ids: Sequence[str] | None, source_item_ids: Sequence[str] | None,
                          source: str | None, start: float | None, end: float | None,
                          entity_key: str | None = None, entity_ids: Sequence[int] = (),
                          phrase: str | None = None) -> list[int]:
    """The events the criteria (combined with AND) name, by rowid; ``entity_key``: only those linked to one of
    ``entity_ids`` or mentioning the name — recorded as a mention (its :func:`~.entities.name_key`), or its words
    in the text, hot or cold (``phrase``, an FTS5 phrase): a name the offline rules never made an entity of
    ("Anna", "Porto") is still found. At least one criterion is given."""
    where, args = _criteria("e.event_id", event_ids, source_item_ids, source, start, end)
    if entity_key is not None:
        marks = placeholders(len(entity_ids)) or "NULL"
        said = ""
        if phrase is not None:
            said = (" OR e.id IN (SELECT rowid FROM fact_events_fts WHERE fact_events_fts MATCH ?)"
                    " OR e.id IN (SELECT rowid FROM fact_events_cold_fts WHERE fact_events_cold_fts MATCH ?)")
        where.append(f"(e.id IN (SELECT event_rowid FROM l1_event_entities WHERE entity_id IN ({marks})) OR "
                     f"e.id IN (SELECT event_rowid FROM entity_mentions WHERE name_key = ? OR entity_id IN ({marks}))"
                     f"{said})")
        args += [*entity_ids, entity_key, *entity_ids]
        if phrase is not None:
            args += [f"content : {phrase}"] * 2
    return [r[0] for r in conn.execute(f"SELECT e.id FROM fact_events e WHERE {' AND '.join(where)} ORDER BY e.id",
                                       args)]


def trace_rowids_matching(conn: Connection, *, event_ids: Sequence[str] | None, source_item_ids: Sequence[str] | None,
                          source: str | None, start: float | None, end: float | None) -> list[int]:
    """The runtime traces the criteria (combined with AND; at least one) name, by rowid."""
    where, args = _criteria("e.trace_id", event_ids, source_item_ids, source, start, end)
    return [r[0] for r in conn.execute(f"SELECT e.id FROM runtime_traces e WHERE {' AND '.join(where)} "
                                       f"ORDER BY e.id", args)]


def entities_named(conn: Connection, key: str) -> list[int]:
    """The entities whose name key is ``key`` or with it as an alias (any case), and those merged into them."""
    found = {r[0] for r in conn.execute(
        "SELECT entity_id FROM entity_catalog c WHERE c.name_key = ? OR EXISTS (SELECT 1 FROM "
        "json_each(c.aliases_json) a WHERE lower(a.value) = ?)", (key, key))}
    frontier = set(found)
    while frontier:
        frontier = {r[0] for r in conn.execute(
            f"SELECT entity_id FROM entity_catalog WHERE merged_into IN ({placeholders(len(frontier))})",
            sorted(frontier))} - found
        found |= frontier
    return sorted(found)


def row_counts(conn: Connection, tables: Sequence[str]) -> dict[str, int]:
    """How many rows each table holds."""
    return {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables}


# ------------------------------------------------------------------ events


def events_of_rowids(conn: Connection, rowids: Sequence[int]) -> list[tuple[str, str | None, str | None, str]]:
    """(event id, source item id, session id, source) of each of these events still stored."""
    if not rowids:
        return []
    return conn.execute(f"SELECT event_id, source_item_id, session_id, source FROM fact_events WHERE id IN "
                        f"({placeholders(len(rowids))})", list(rowids)).fetchall()


def sources_of_rowids(conn: Connection, rowids: Sequence[int]) -> dict[str, int]:
    """How many of these events each source holds."""
    return dict(conn.execute("SELECT source, count(*) FROM fact_events WHERE id IN (SELECT value FROM json_each(?)) "
                             "GROUP BY source ORDER BY count(*) DESC", (json.dumps(list(rowids)),)).fetchall())


def newest_of_rowids(conn: Connection, rowids: Sequence[int], limit: int) -> list[tuple[Any, ...]]:
    """(event id, timestamp, source, content, source_item_id, session_id) of the newest ``limit`` of these events."""
    return conn.execute("SELECT event_id, timestamp, source, content, source_item_id, session_id FROM fact_events "
                        "WHERE id IN (SELECT value FROM json_each(?)) ORDER BY timestamp DESC LIMIT ?",
                        (json.dumps(list(rowids)), limit)).fetchall()


def chat_pointers_of_rowids(conn: Connection, rowids: Sequence[int]) -> list[str]:
    """The event ids and item ids of the chat messages among these events: what a fact's pointers name."""
    return [pointer for row in conn.execute(
        "SELECT event_id, source_item_id FROM fact_events WHERE id IN (SELECT value FROM json_each(?)) "
        "AND source = 'chat'", (json.dumps(list(rowids)),)) for pointer in row if pointer]


def entity_names_of(conn: Connection, entity_ids: Sequence[int]) -> list[str]:
    """The canonical names of these entities."""
    return [r[0] for r in conn.execute("SELECT name FROM entity_catalog WHERE entity_id IN "
                                       "(SELECT value FROM json_each(?))", (json.dumps(list(entity_ids)),))]


def extractions_of_events(conn: Connection, rowids: Sequence[int]) -> list[str]:
    """The fact extractions that read one of these events."""
    return [r[0] for r in conn.execute(f"SELECT DISTINCT extraction_id FROM chat_extraction WHERE "
                                       f"event_rowid IN ({placeholders(len(rowids))}) AND extraction_id IS NOT NULL",
                                       list(rowids))]


def entities_touched_by(conn: Connection, rowids: Sequence[int]) -> list[int]:
    """The entities these events link to, mention, or support an edge or assertion of."""
    marks = placeholders(len(rowids))
    return sorted({r[0] for r in conn.execute(
        f"SELECT entity_id FROM l1_event_entities WHERE event_rowid IN ({marks}) "
        f"UNION SELECT entity_id FROM entity_mentions WHERE event_rowid IN ({marks}) AND entity_id IS NOT NULL "
        f"UNION SELECT k.subject_id FROM l2_evidence v JOIN kg_edges k ON k.triple_id = v.row_key "
        f"WHERE v.kind = 'edge' AND v.event_rowid IN ({marks}) "
        f"UNION SELECT k.object_id FROM l2_evidence v JOIN kg_edges k ON k.triple_id = v.row_key "
        f"WHERE v.kind = 'edge' AND v.event_rowid IN ({marks}) "
        f"UNION SELECT a.entity_id FROM l2_evidence v JOIN tom_trait_assertions a ON "
        f"a.assertion_id = CAST(v.row_key AS INTEGER) WHERE v.kind = 'assertion' AND v.event_rowid IN ({marks})",
        list(rowids) * 5)})


def delete_events(conn: Connection, rowids: Sequence[int]) -> None:
    """Delete these events: the schema's cascades and triggers take their full text, chunks, vectors, jobs,
    entity links and evidence with them."""
    conn.execute(f"DELETE FROM fact_events WHERE id IN ({placeholders(len(rowids))})", list(rowids))


def delete_extractions(conn: Connection, extraction_ids: Sequence[str]) -> None:
    conn.executemany("DELETE FROM fact_extractions WHERE extraction_id = ?", [(e,) for e in extraction_ids])


def delete_retries_of_gone_sessions(conn: Connection) -> None:
    """A session with no message left starts again at generation 0: no retry state may carry over."""
    conn.execute("DELETE FROM extraction_retries WHERE session_id NOT IN (SELECT session_id FROM chat_sessions)")


# ------------------------------------------------------------------ facts


def facts_citing(conn: Connection, message_ids: Sequence[str]) -> set[int]:
    """The facts whose source, proposal or acceptance message is one of ``message_ids``."""
    found: set[int] = set()
    for start in range(0, len(message_ids), _FACT_LOOKUP_CHUNK):
        chunk = list(message_ids[start:start + _FACT_LOOKUP_CHUNK])
        marks = placeholders(len(chunk))
        found |= {r[0] for r in conn.execute(
            f"SELECT fact_id FROM memory_facts WHERE source_message_id IN ({marks}) OR proposal_message_id IN "
            f"({marks}) OR accepting_message_id IN ({marks})", chunk * 3)}
    return found


def facts_merged_from(conn: Connection, fact_ids: Sequence[int]) -> set[int]:
    """The facts these (status ``merged``) were merged into."""
    return {r[0] for r in conn.execute(
        f"SELECT superseded_by FROM memory_facts WHERE fact_id IN ({placeholders(len(fact_ids))}) AND status = "
        f"'merged' AND superseded_by IS NOT NULL", list(fact_ids))}


def fact_statuses(conn: Connection, fact_ids: Sequence[int]) -> dict[int, str]:
    return dict(conn.execute(f"SELECT fact_id, status FROM memory_facts WHERE fact_id IN "
                             f"({placeholders(len(fact_ids))})", list(fact_ids)).fetchall())


def fact_successors(conn: Connection, fact_ids: Sequence[int]) -> dict[int, int | None]:
    """What replaced or absorbed each of these facts (None: nothing)."""
    return dict(conn.execute(f"SELECT fact_id, superseded_by FROM memory_facts WHERE fact_id IN "
                             f"({placeholders(len(fact_ids))})", list(fact_ids)).fetchall())


def facts_retired_by(conn: Connection, fact_ids: Sequence[int]) -> list[tuple[int, int]]:
    """(fact, what replaced it) of each fact outside ``fact_ids`` that one of them replaced or absorbed."""
    marks = placeholders(len(fact_ids))
    return conn.execute(f"SELECT fact_id, superseded_by FROM memory_facts WHERE superseded_by IN ({marks}) "
                        f"AND fact_id NOT IN ({marks})", list(fact_ids) * 2).fetchall()


def replace_fact_by(conn: Connection, fact_id: int, survivor: int) -> None:
    conn.execute("UPDATE memory_facts SET superseded_by = ? WHERE fact_id = ?", (survivor, fact_id))


def reinstate_fact(conn: Connection, fact_id: int) -> None:
    """The fact is current again."""
    conn.execute("UPDATE memory_facts SET status = 'active', superseded_by = NULL WHERE fact_id = ?", (fact_id,))


def clear_fact_successor(conn: Connection, fact_id: int) -> None:
    """The fact stays retired, replaced by nothing that is stored."""
    conn.execute("UPDATE memory_facts SET superseded_by = NULL WHERE fact_id = ?", (fact_id,))


def delete_facts(conn: Connection, fact_ids: Sequence[int]) -> None:
    conn.execute(f"DELETE FROM memory_facts WHERE fact_id IN ({placeholders(len(fact_ids))})", list(fact_ids))


# ------------------------------------------------------------------ runtime traces and what L4 learnt from them


def executions_learnt_from(conn: Connection, trace_rowids: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """(skill, executions, successes, failures) that L4 counted from these runtime traces, per skill."""
    return conn.execute(f"SELECT skill_id, count(*), sum(ok), sum(1 - ok) FROM l4_execution_traces "
                        f"WHERE runtime_id IN ({placeholders(len(trace_rowids))}) GROUP BY skill_id",
                        list(trace_rowids)).fetchall()


def delete_traces(conn: Connection, trace_rowids: Sequence[int]) -> None:
    """Delete these runtime traces and the L4 executions learnt from them."""
    marks = placeholders(len(trace_rowids))
    conn.execute(f"DELETE FROM l4_execution_traces WHERE runtime_id IN ({marks})", list(trace_rowids))
    conn.execute(f"DELETE FROM runtime_traces WHERE id IN ({marks})", list(trace_rowids))


def unlearn(conn: Connection, skill_id: int, runs: int, successes: int, failures: int) -> None:
    """The tool's counts drop by what the deleted executions had added and its strategy (which may quote them)
    is distilled again from what remains; a tool left with no run goes."""
    conn.execute(
        "UPDATE procedural_skills SET runs = max(0, runs - ?), successes = max(0, successes - ?), "
        "failures = max(0, failures - ?), mean_duration_ms = (SELECT avg(duration_ms) FROM l4_execution_traces "
        "WHERE skill_id = ?), strategy_json = NULL, optimized_prompt = NULL, distilled_at = NULL, "
        "distilled_by = NULL, distill_due = 1 WHERE skill_id = ?", (runs, successes, failures, skill_id, skill_id))
    conn.execute("DELETE FROM procedural_skills WHERE skill_id = ? AND runs = 0", (skill_id,))


# ------------------------------------------------------------------ entities forgotten by name


def stored_entities(conn: Connection, entity_ids: Sequence[int]) -> list[int]:
    """Those of ``entity_ids`` still stored."""
    if not entity_ids:
        return []
    return [r[0] for r in conn.execute(f"SELECT entity_id FROM entity_catalog WHERE entity_id IN "
                                       f"({placeholders(len(entity_ids))})", list(entity_ids))]


def edge_neighbours_of(conn: Connection, entity_ids: Sequence[int]) -> list[int]:
    """The entities on the other side of an edge of one of these (any status)."""
    marks = placeholders(len(entity_ids))
    return [r[0] for r in conn.execute(
        f"SELECT subject_id FROM kg_edges WHERE object_id IN ({marks}) UNION SELECT object_id FROM kg_edges "
        f"WHERE subject_id IN ({marks})", list(entity_ids) * 2)]


def delete_entities(conn: Connection, entity_ids: Sequence[int]) -> None:
    """Delete these entities with their edges, assertions and mentions; those merged into them stand alone."""
    ids = list(entity_ids)
    marks = placeholders(len(ids))
    conn.execute(f"DELETE FROM kg_edges WHERE subject_id IN ({marks}) OR object_id IN ({marks})", ids * 2)
    conn.execute(f"DELETE FROM tom_trait_assertions WHERE entity_id IN ({marks})", ids)
    conn.execute(f"DELETE FROM entity_mentions WHERE entity_id IN ({marks})", ids)
    conn.execute(f"UPDATE entity_catalog SET merged_into = NULL WHERE merged_into IN ({marks})", ids)
    conn.execute(f"DELETE FROM entity_catalog WHERE entity_id IN ({marks})", ids)


def queue_snapshot_refresh(conn: Connection, entity_ids: Sequence[int]) -> None:
    """Queue these entities' snapshots to be made again first (``enqueued_at`` 0), unless already queued."""
    conn.executemany("INSERT OR IGNORE INTO snapshot_refresh_queue (entity_id, enqueued_at) VALUES (?, 0)",
                     [(e,) for e in entity_ids])
