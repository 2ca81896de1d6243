"""The events' full-text index (``fact_events_fts``) made again by hand — by ``Memory.reindex`` a range of
rowids at a time, by an import over the whole table — and the events queued to be embedded again. At ingest
the index rows are written by :mod:`.l1`, the same way (an event's words with its speaker, and its context)."""

from __future__ import annotations

from .connection import Connection
from .queue import EMBEDDING_JOBS

# A cold event's terms are in the cold tier's index (store/tiers.py), every other event's in the hot one.
_INDEX_EVENTS = ("INSERT INTO {table} (rowid, content, context) SELECT e.id, "
                 "magi_fts_index(e.content, json_extract(e.metadata_json, '$.timeline.speaker')), c.context "
                 "FROM fact_events e JOIN fact_events_context c ON c.id = e.id WHERE e.tier {tier}")
_TIER_INDEXES = (("fact_events_fts", "<> 1"), ("fact_events_cold_fts", "= 1"))


def event_rowid_range(conn: Connection) -> tuple[int | None, int | None]:
    """(lowest, highest) event rowid; (None, None) when there is no event."""
    return conn.execute("SELECT min(id), max(id) FROM fact_events").fetchone()


def drop_rows_outside(conn: Connection, low: int, high: int) -> None:
    """Delete the index rows outside the events' rowids (of no event)."""
    for table, _ in _TIER_INDEXES:
        conn.execute(f"DELETE FROM {table} WHERE rowid < ? OR rowid > ?", (low, high))


def reindex_range(conn: Connection, first: int, last: int) -> None:
    """Make the index rows of the events with rowids from ``first`` to ``last`` again."""
    for table, tier in _TIER_INDEXES:
        conn.execute(f"DELETE FROM {table} WHERE rowid BETWEEN ? AND ?", (first, last))
        conn.execute(_INDEX_EVENTS.format(table=table, tier=tier) + " AND e.id BETWEEN ? AND ?", (first, last))


def reindex_all(conn: Connection) -> None:
    """Make every index row again, in one statement per index over the finished table."""
    for table, tier in _TIER_INDEXES:
        conn.execute(f"DELETE FROM {table}")
        conn.execute(_INDEX_EVENTS.format(table=table, tier=tier))


def requeue_embedding_range(conn: Connection, first: int, last: int, now: float) -> int:
    """Queue the events with rowids from ``first`` to ``last`` to be embedded again; returns how many."""
    return EMBEDDING_JOBS.requeue(conn, "SELECT id FROM fact_events WHERE id BETWEEN ? AND ?", (first, last), now)
