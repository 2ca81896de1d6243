"""Reads that hold for any table of the schema: how many rows one holds."""

from __future__ import annotations

from .connection import Connection

# readers the tests and layers share

def row_count(conn: Connection, table: str) -> int:
    """How many rows ``table`` holds. The name must be a table or view of the schema (it cannot be bound as a
    parameter, so it is checked against ``sqlite_master`` before it is spelt into the statement)."""
    known = conn.execute("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?",
                         (table,)).fetchone()
    if known is None:
        raise ValueError(f"no table {table!r}")
    return conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
