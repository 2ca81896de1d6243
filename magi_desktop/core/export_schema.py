"""Which tables an export holds and in which order they load, read from the live schema.

Table-driven, not a hard-coded list: a migration that adds a table adds it to the export. Left
out are what SQLite keeps for itself (``sqlite_*``), views, virtual tables (FTS5, vec0) and their
shadow tables — all rebuilt — and the tables in :data:`NOT_EXPORTED`, whose rows the importing
memory makes itself.

The load order puts a table after the tables its foreign keys point at, and after every table
whose INSERT triggers write into it: an import lets the triggers fire (they fill the trigger-kept
full-text indexes), then replaces what they wrote into an exported table with the exported rows.
"""

from __future__ import annotations

import heapq

from .store.connection import Connection
from .store.exports import TableSpec, foreign_key_parents, insert_trigger_writes, quote_name, table_columns, table_list

# Rows the importing memory derives or owns, so they are not exported (the header lists them too).
NOT_EXPORTED = {
    "schema_migrations": "the header carries the schema version; the importing memory has its own",
    "vector_index": "names the importing memory's embedding model",
    "ann_partitions": "the files of the exporting memory's approximate index (the importing memory builds its own)",
    "event_chunks": "made again when the imported events are embedded (the model is deterministic)",
    "embedding_jobs": "every imported event is queued for embedding by the fact_events insert trigger",
    "forget_secret": "the key of the receipts' hashes stays with the memory that made them",
    "forget_targets": "the rows a running forget still has to delete, by the exporting memory's rowids",
    "export_log": "where the exporting memory's own exports went",
    "l1_superseded": "which versions were retired (ids only): the export holds the live versions",
}

# What an import takes from an export (issue 16), in the order it loads them: L1 events, re-derived by the
# write path, and the state the user made, each value checked. Everything else is rebuilt (below).
IMPORTED = {
    "memory_meta": "the dedupe secret, so a replayed source still dedupes",
    "fact_events": "L1 events: ids, payload fields and record time kept; everything derived made again",
    "runtime_traces": "runtime traces and tool runs: as fact_events",
    "chat_sessions": "how often each session was ended (its generation); the rest follows the events",
    "fact_extractions": "the record of extractions already done (so deleted facts are not extracted again)",
    "chat_extraction": "each message's generation and whether an extraction consumed it",
    "memory_facts": "the facts agents saved, each re-checked by the quote gate and the extraction validator",
    "forget_receipts": "what the user forgot (ids and counts, no content)",
    "user_reviews": "the user's confirm / delete / correct / merge, by natural keys, applied again to the rebuilt L2",
    "review_replays": "reviews an earlier import had not applied yet",
}
# Read from the export only to turn the reviews' local ids into natural keys; never loaded.
TRANSLATION_ONLY = ("entity_catalog", "kg_edges", "tom_trait_assertions")
REBUILT = {
    "entity_catalog": "entities: linked again at ingest and by the L2 worker",
    "l1_event_entities": "linked again as each event is stored",
    "event_mentioned_times": "read again from each event's words as it is stored",
    "entity_mentions": "L2, projected again",
    "kg_edges": "L2, projected again",
    "tom_trait_assertions": "L2, projected again",
    "tom_snapshots": "L2, refreshed from the rebuilt assertions",
    "snapshot_refresh_queue": "a queue",
    "l2_episodes": "L2, projected again",
    "l2_evidence": "L2, projected again",
    "l2_endings": "L2, projected again (which event ended which fact)",
    "l2_episode_upkeep": "a queue, emptied in the transaction that fills it",
    "l2_projection_jobs": "queued again for every cognition-eligible event",
    "user_denials": "made again when the user's deletions are applied",
    "l3_summaries": "L3, summarised again by the periodic jobs",
    "summary_event_links": "L3",
    "summary_children": "L3",
    "periodic_jobs": "L3 windows run again from the events",
    "procedural_skills": "L4, counted again from the imported tool runs",
    "l4_execution_traces": "L4, counted again from the imported tool runs",
    "l1_event_counts": "counted again as the events are stored",
    "source_counters": "counted again from the imported events",
    "extraction_retries": "a queue",
    "plugin_state": "collector cursors and status: a collector starts again, its items dedupe",
    "agent_usage": "usage counters of this machine's agents",
    "redaction_receipts": "this memory's own re-redactions: imported events are redacted with the current rules",
    "activity_blocks": "activity blocks: folded again from the imported events (the exported blocks are not loaded)",
    "activity_block_members": "folded again from the imported events",
    "aggregation_settings": "the importing memory's own choice (collectors.json sets it again)",
}



def _is_integer_key(pk_columns: list[tuple[str, str]]) -> bool:
    return len(pk_columns) == 1 and pk_columns[0][1].strip().upper() == "INTEGER"


def _spec(conn: Connection, name: str, without_rowid: bool) -> TableSpec:
    # cid, name, type, notnull, default, pk, hidden (generated columns are not data)
    info = table_columns(conn, name)
    columns = tuple(row[1] for row in info if row[6] == 0)
    pk = [(row[1], row[2]) for row in sorted(info, key=lambda r: r[5]) if row[5]]
    if without_rowid:
        return TableSpec(name, columns, False, ", ".join(quote_name(c) for c, _ in pk))
    return TableSpec(name, columns, not _is_integer_key(pk), "rowid")


def _skipped(tables: list[tuple[str, str]]) -> set[str]:
    """sqlite_* tables, virtual tables and their shadow tables (vec0 reports some as plain tables)."""
    virtual = [name for name, kind in tables if kind == "virtual"]
    return {name for name, kind in tables
            if kind in ("virtual", "shadow") or name.startswith("sqlite_") or name in NOT_EXPORTED
            or any(name.startswith(v + "_") for v in virtual)}


def _dependencies(conn: Connection, names: set[str]) -> dict[str, set[str]]:
    """For each table, the tables that must load before it (foreign-key parents, INSERT-trigger sources)."""
    before: dict[str, set[str]] = {name: set() for name in names}
    for name in names:
        for parent in foreign_key_parents(conn, name):
            if parent in names and parent != name:
                before[name].add(parent)
    for table, target in insert_trigger_writes(conn):
        if table in names and target in names and target != table:
            before[target].add(table)
    return before


def _ordered(before: dict[str, set[str]]) -> list[str]:
    """A topological order, ties by name (deterministic); tables left in a cycle follow by name."""
    waiting = {name: set(parents) for name, parents in before.items()}
    ready = [name for name, parents in waiting.items() if not parents]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        name = heapq.heappop(ready)
        order.append(name)
        for other, parents in waiting.items():
            if name in parents:
                parents.discard(name)
                if not parents and other not in order and other not in ready:
                    heapq.heappush(ready, other)
    return order + sorted(set(before) - set(order))


def exported_tables(conn: Connection) -> list[TableSpec]:
    """The tables an export holds, in load order."""
    listed = table_list(conn)
    skipped = _skipped([(name, kind) for name, kind, _ in listed])
    kept = {name: without_rowid for name, kind, without_rowid in listed if kind == "table" and name not in skipped}
    return [_spec(conn, name, kept[name]) for name in _ordered(_dependencies(conn, set(kept)))]
