"""What ``magi doctor`` asks the database engine and the memory's file: whether the SQLite build has what the
memory needs (FTS5 with contentless delete, sqlite-vec), and whether the file reads (a quick check, its events)."""

from __future__ import annotations

from .connection import Connection


def make_contentless_fts5(conn: Connection) -> None:
    """Create a contentless FTS5 table with ``contentless_delete`` (use a scratch connection); raises when this
    SQLite lacks it."""
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, content='', contentless_delete=1)")


def vec_version(conn: Connection) -> str:
    """The loaded sqlite-vec's version; raises when it did not load."""
    return conn.execute("SELECT vec_version()").fetchone()[0]


def quick_check(conn: Connection) -> str:
    """``PRAGMA quick_check``'s first line: "ok" for a sound file."""
    return conn.execute("PRAGMA quick_check").fetchone()[0]


def event_count(conn: Connection) -> int:
    return conn.execute("SELECT count(*) FROM fact_events").fetchone()[0]
