"""The events' full-text index (``fact_events_fts``) made again by hand — by ``Memory.reindex`` a range of
rowids at a time, by an import over the whole table — and the events queued to be embedded again. At ingest
the index rows are written by :mod:`.l1`, the same way (an event's words with its speaker, and its context)."""

from __future__ import annotations

from .connection import Connection
from .queue import EMBEDDING_JOBS

_INDEX_EVENTS = ("INSERT INTO fact_events_fts (rowid, content, context) SELECT e.id, "
                 "magi_fts_index(e.content, json_extract(e.metadata_json, '$.timeline.speaker')), c.context "
                 "FROM fact_events e JOIN fact_events_context c ON c.id = e.id")


def event_rowid_range(conn: Connection) -> tuple[int | None, int | None]:
    """(lowest, highest) event rowid; (None, None) when there is no event."""
    return conn.execute("SELECT min(id), max(id) FROM fact_events").fetchone()


def drop_rows_outside(conn: Connection, low: int, high: int) -> None:
    """Delete the index rows outside the events' rowids (of no event)."""
    conn.execute("DELETE FROM fact_events_fts WHERE rowid < ? OR rowid > ?", (low, high))


def reindex_range(conn: Connection, first: int, last: int) -> None:
    """Make the index rows of the events with rowids from ``first`` to ``last`` again."""
    conn.execute("DELETE FROM fact_events_fts WHERE rowid BETWEEN ? AND ?", (first, last))
    conn.execute(f"{_INDEX_EVENTS} WHERE e.id BETWEEN ? AND ?", (first, last))


def reindex_all(conn: Connection) -> None:
    """Make every index row again, in one statement over the finished table."""
    conn.execute("DELETE FROM fact_events_fts")
    conn.execute(_INDEX_EVENTS)


def requeue_embedding_range(conn: Connection, first: int, last: int, now: float) -> int:
    """Queue the events with rowids from ``first`` to ``last`` to be embedded again; returns how many."""
    return EMBEDDING_JOBS.requeue(conn, "SELECT id FROM fact_events WHERE id BETWEEN ? AND ?", (first, last), now)
