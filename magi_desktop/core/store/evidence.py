"""``l2_evidence``: the events behind each L2 row (an assertion, an edge, an episode): the reads L3 makes, then the
L2 worker's writes."""

from __future__ import annotations

from .connection import Connection

# readers the tests and layers share

def evidence_source_items(conn: Connection, kind: str, row_key: str) -> list[str | None]:
    """The source item ids of the events behind one L2 row, in time order (None for an event without one)."""
    return [r[0] for r in conn.execute(
        "SELECT e.source_item_id FROM l2_evidence v JOIN fact_events e ON e.id = v.event_rowid "
        "WHERE v.kind = ? AND v.row_key = ? ORDER BY e.timestamp", (kind, row_key))]


def evidence_of_event(conn: Connection, event_rowid: int) -> list[tuple[str, str]]:
    """(kind, row_key) of every L2 row an event is evidence for, in that order."""
    return conn.execute("SELECT kind, row_key FROM l2_evidence WHERE event_rowid = ? ORDER BY 1, 2",
                        (event_rowid,)).fetchall()


def dangling_evidence(conn: Connection) -> int:
    """How many evidence rows cite an event that is no longer stored (there should be none)."""
    return conn.execute("SELECT count(*) FROM l2_evidence v LEFT JOIN fact_events e ON e.id = v.event_rowid "
                        "WHERE e.id IS NULL").fetchone()[0]


def evidence_events(conn: Connection, kind: str, row_key: str) -> list[int]:
    """Rowids of the events behind one L2 row of ``kind`` ('assertion', 'edge', 'episode')."""
    return [r[0] for r in conn.execute("SELECT event_rowid FROM l2_evidence WHERE kind = ? AND row_key = ?",
                                       (kind, row_key))]


def visible_evidence(conn: Connection, kind: str, row_key: str, now: float, start: float,
                     end: float) -> list[tuple[str, str | None, str, str | None]]:
    """(event_id, source_item_id, evidence_class, session_id) of the events behind one L2 row recorded by ``now``
    that happened in [start, end), in time order."""
    return conn.execute(
        "SELECT e.event_id, e.source_item_id, e.evidence_class, e.session_id FROM l2_evidence v JOIN fact_events e "
        "ON e.id = v.event_rowid WHERE v.kind = ? AND v.row_key = ? AND e.recorded_at <= ? AND e.timestamp >= ? "
        "AND e.timestamp < ? ORDER BY e.timestamp", (kind, row_key, now, start, end)).fetchall()


# --------------------------------------------------------------------- what the Markdown export reads

def evidence_counts(conn: Connection) -> list[tuple[str, str, int]]:
    """(kind, row_key, how many events) of every L2 row with evidence."""
    return conn.execute("SELECT kind, row_key, count(*) FROM l2_evidence GROUP BY kind, row_key").fetchall()


# --- the L2 worker's writes (core/l2) -------------------------------------------------------------------------

def link_evidence(conn: Connection, kind: str, key: str | int, event_rowid: int) -> bool:
    """Tie a row to an event; False if it already was (a retried batch must not count twice)."""
    return conn.execute("INSERT OR IGNORE INTO l2_evidence (kind, row_key, event_rowid) VALUES (?, ?, ?)",
                        (kind, str(key), event_rowid)).rowcount == 1


def evidence_count(conn: Connection, kind: str, row_key: str) -> int:
    """How many events stand behind one L2 row."""
    return conn.execute("SELECT count(*) FROM l2_evidence WHERE kind = ? AND row_key = ?",
                        (kind, row_key)).fetchone()[0]


def copy_evidence(conn: Connection, kind: str, from_key: str, to_key: str) -> None:
    """The events behind one L2 row of ``kind`` stand behind another too."""
    conn.execute("INSERT OR IGNORE INTO l2_evidence (kind, row_key, event_rowid) SELECT kind, ?, "
                 "event_rowid FROM l2_evidence WHERE kind = ? AND row_key = ?", (to_key, kind, from_key))
