"""Reads that hold for any table of the schema: how many rows one holds, and all of them (a check that no copy
of some words is left in a table reads every column of every row)."""

from __future__ import annotations

from typing import Any

from .connection import Connection

# readers the tests and layers share

def row_count(conn: Connection, table: str) -> int:
    """How many rows ``table`` holds."""
    return conn.execute(f"SELECT count(*) FROM {_known(conn, table)}").fetchone()[0]


def all_rows(conn: Connection, table: str) -> list[tuple[Any, ...]]:
    """Every row of ``table``, every column, in its stored order."""
    return conn.execute(f"SELECT * FROM {_known(conn, table)}").fetchall()


def _known(conn: Connection, table: str) -> str:
    """``table`` quoted, once it is known to be a table or view of the schema (a name cannot be bound as a
    parameter, so it is checked against ``sqlite_master`` before it is spelt into a statement)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?",
                    (table,)).fetchone() is None:
        raise ValueError(f"no table {table!r}")
    return '"' + table + '"'
