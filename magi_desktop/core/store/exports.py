"""What an export reads (``core/export.py``, ``core/export_schema.py``): the live schema — which tables there
are, their columns, foreign keys and triggers — the schema version, and every row of an exported table.
Which tables an export holds and in which order they load is ``export_schema.py``'s decision."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .connection import Connection


def quote_name(name: str) -> str:
    """A table or column name as an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class TableSpec:
    """An exported table: its columns, and whether its rowid is exported (a rowid table without an
    INTEGER PRIMARY KEY, whose rowid something else may point at, e.g. kg_edges for its vectors)."""

    name: str
    columns: tuple[str, ...]
    with_rowid: bool
    order_by: str

    def select_sql(self) -> str:
        columns = ", ".join(quote_name(c) for c in self.columns)
        rowid = "rowid, " if self.with_rowid else ""
        return f"SELECT {rowid}{columns} FROM {quote_name(self.name)} ORDER BY {self.order_by}"


def exported_rows(conn: Connection, table: TableSpec) -> Iterator[tuple[Any, ...]]:
    """Every row of an exported table (its rowid first when it has one exported), in its order."""
    return conn.execute(table.select_sql())


def row_count(conn: Connection, table: str) -> int:
    return conn.execute(f"SELECT count(*) FROM {quote_name(table)}").fetchone()[0]


def schema_version(conn: Connection) -> int:
    """The newest migration applied (0: none)."""
    return conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]


def applied_migrations(conn: Connection) -> list[tuple[int, str]]:
    """(version, name) of every migration applied, oldest first."""
    return conn.execute("SELECT version, name FROM schema_migrations ORDER BY 1").fetchall()


def chunk_model(conn: Connection) -> tuple[str, int] | None:
    """(model, dimension) of the event chunks' vectors, or None before an embedder first opened the memory."""
    return conn.execute("SELECT model, dimension FROM vector_index WHERE name = 'chunks'").fetchone()


# --------------------------------------------------------------------- the live schema

def table_list(conn: Connection) -> list[tuple[str, str, bool]]:
    """(name, kind: table | view | virtual | shadow, WITHOUT ROWID) of every table of the main database."""
    return [(row[1], row[2], bool(row[4])) for row in conn.execute("PRAGMA main.table_list")]


def table_columns(conn: Connection, table: str) -> list[tuple[Any, ...]]:
    """``PRAGMA table_xinfo`` of a table: (cid, name, type, notnull, default, pk, hidden) per column."""
    return conn.execute(f"PRAGMA table_xinfo({quote_name(table)})").fetchall()


def foreign_key_parents(conn: Connection, table: str) -> list[str]:
    """The tables a table's foreign keys point at (one per key column)."""
    return [fk[2] for fk in conn.execute(f"PRAGMA foreign_key_list({quote_name(table)})")]


_TRIGGER_EVENT = re.compile(r"CREATE\s+(?:TEMP\w*\s+)?TRIGGER\s+(?:IF\s+NOT\s+EXISTS\s+)?\S+\s+"
                            r"(?:BEFORE\s+|AFTER\s+|INSTEAD\s+OF\s+)?(INSERT|DELETE|UPDATE)\b", re.IGNORECASE)
_WRITE_TARGET = re.compile(r"\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|REPLACE\s+INTO|UPDATE\s+(?:OR\s+\w+\s+)?|"
                           r"DELETE\s+FROM)\s+[\"`\[]?(\w+)", re.IGNORECASE)


def insert_trigger_writes(conn: Connection) -> list[tuple[str, str]]:
    """(table, table written) for each table an INSERT trigger writes into (INSERT, REPLACE, UPDATE or DELETE in
    its body), read from the triggers' CREATE text."""
    writes: list[tuple[str, str]] = []
    for table, sql in conn.execute("SELECT tbl_name, sql FROM sqlite_master WHERE type = 'trigger'"):
        event = _TRIGGER_EVENT.search(sql or "")
        if not event or event.group(1).upper() != "INSERT":
            continue
        begin = re.search(r"\bBEGIN\b", sql, re.IGNORECASE)
        body = sql[begin.end():] if begin else ""
        writes.extend((table, target) for target in _WRITE_TARGET.findall(body))
    return writes
