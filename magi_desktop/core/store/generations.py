"""A counter of deletions of L1 events, for work that reads events outside its write transaction.

L3 draws a summary from a window's events on a read connection, then writes it; a forget chunk in between
may delete some of them. ``count:max(rowid)`` of the window cannot tell (a rowid freed by the deletion is
given to the next insert), so the writer compares this counter, bumped in every transaction that deletes
events, as it was when it began reading and as it is inside its write.
"""

from __future__ import annotations

from .connection import Connection

EVENTS_DELETED = "events_deleted"        # memory_meta key


def events_deleted(conn: Connection) -> int:
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (EVENTS_DELETED,)).fetchone()
    return int(row[0]) if row else 0


def note_events_deleted(conn: Connection) -> None:
    """Inside the transaction that deletes events."""
    conn.execute("INSERT INTO memory_meta (key, value) VALUES (?, '1') ON CONFLICT (key) DO UPDATE SET "
                 "value = CAST(value AS INTEGER) + 1", (EVENTS_DELETED,))
