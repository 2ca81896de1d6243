"""The queries of redacting stored text again (architecture §14, issue 16, :mod:`..reredact`): the recorded
rules version, the receipts (``redaction_receipts``), the schema's text columns, the rows that may hold a
secret, the rewrite of one row and what is made again from it. Which tables and columns hold text is read
from the schema, so the rewrite is the whole point of this path, across every table.

Writes run inside the caller's write transaction; the candidate rows are read on the caller's reader.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .connection import Connection
from .queue import EMBEDDING_JOBS
from .vectors import ENTITY_VEC_TABLE

META_KEY = "redaction_rules"        # memory_meta: the rules version what is stored was redacted with
MAY_REDACT = "magi_may_redact"      # the SQL function the caller registers on the reader: may this text change?
# Tables that are the memory's own bookkeeping: the dedupe secret, the migrations, these receipts.
_SKIPPED_TABLES = frozenset({"memory_meta", "schema_migrations", "redaction_receipts"})


# ------------------------------------------------------------------ the recorded version and the receipts


def stored_version(conn: Connection) -> str | None:
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (META_KEY,)).fetchone()
    return row[0] if row else None


def record_version(conn: Connection, version: str) -> None:
    conn.execute("INSERT INTO memory_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                 "value = excluded.value", (META_KEY, version))


def holds_events_or_traces(conn: Connection) -> bool:
    return any(conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() for table in ("fact_events", "runtime_traces"))


def last_finished_receipt(conn: Connection) -> tuple[Any, ...] | None:
    """(receipt id, finished at, rules from, rules to, tables JSON, families JSON) of the last run that finished."""
    return conn.execute("SELECT receipt_id, finished_at, rules_from, rules_to, tables_json, families_json FROM "
                        "redaction_receipts WHERE finished_at IS NOT NULL ORDER BY receipt_id DESC LIMIT 1").fetchone()


def start_receipt(conn: Connection, started_at: float, rules_from: str | None, rules_to: str) -> int:
    return conn.execute("INSERT INTO redaction_receipts (started_at, rules_from, rules_to) VALUES (?, ?, ?)",
                        (started_at, rules_from, rules_to)).lastrowid


def finish_receipt(conn: Connection, receipt_id: int | None, finished_at: float, rows_scanned: int, tables_json: str,
                   families_json: str) -> None:
    conn.execute("UPDATE redaction_receipts SET finished_at = ?, rows_scanned = ?, tables_json = ?, "
                 "families_json = ? WHERE receipt_id = ?",
                 (finished_at, rows_scanned, tables_json, families_json, receipt_id))


def note_backups_replaced(conn: Connection, receipt_id: int | None, backups_replaced: int | None) -> None:
    conn.execute("UPDATE redaction_receipts SET backups_replaced = ? WHERE receipt_id = ?",
                 (backups_replaced, receipt_id))


def receipts(conn: Connection, limit: int) -> list[tuple[Any, ...]]:
    """(receipt id, started at, finished at, rules from, rules to, rows scanned, tables JSON, families JSON,
    backups replaced) of the newest ``limit`` runs, newest first."""
    return conn.execute(
        "SELECT receipt_id, started_at, finished_at, rules_from, rules_to, rows_scanned, tables_json, "
        "families_json, backups_replaced FROM redaction_receipts ORDER BY receipt_id DESC LIMIT ?", (limit,)).fetchall()


# ------------------------------------------------------------------ the schema's text


@dataclass(frozen=True)
class Table:
    name: str
    key: tuple[str, ...]            # ("rowid",) or the primary key of a WITHOUT ROWID table
    columns: tuple[str, ...]        # its TEXT columns
    unique: frozenset[str]          # text columns in a primary key or a unique index


def text_tables(conn: Connection) -> list[Table]:
    """Every ordinary table with TEXT columns (FTS5 / vec0 tables and their shadow tables are indexes)."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                        "ORDER BY name").fetchall()
    virtual = [name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL TABLE")]
    tables = []
    for name, sql in rows:
        if name in _SKIPPED_TABLES or name in virtual or any(name.startswith(v + "_") for v in virtual):
            continue
        info = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
        columns = tuple(c[1] for c in info if (c[2] or "").upper() == "TEXT")
        if not columns:
            continue
        unique = {c[1] for c in info if c[5]}
        for index in conn.execute(f'PRAGMA index_list("{name}")').fetchall():
            if index[2]:
                unique |= {c[2] for c in conn.execute(f'PRAGMA index_info("{index[1]}")').fetchall()}
        without_rowid = "WITHOUT ROWID" in (sql or "").upper()
        key = tuple(c[1] for c in sorted(info, key=lambda c: c[5]) if c[5]) if without_rowid else ("rowid",)
        tables.append(Table(name, key, columns, frozenset(unique) & set(columns)))
    return tables


def candidate_rows(reader: Connection, table: Table, batch_rows: int) -> Iterator[list[tuple[Any, ...]]]:
    """Rows of ``table`` with a text :data:`MAY_REDACT` lets through, ``batch_rows`` at a time: (key…, columns…)."""
    selected = ", ".join(f'"{c}"' for c in (*table.key, *table.columns))
    may = " OR ".join(f'{MAY_REDACT}("{c}")' for c in table.columns)
    if table.key != ("rowid",):
        rows = reader.execute(f'SELECT {selected} FROM "{table.name}" WHERE {may}').fetchall()
        for start in range(0, len(rows), batch_rows):
            yield rows[start:start + batch_rows]
        return
    last = -1 << 62
    while True:
        rows = reader.execute(f'SELECT {selected} FROM "{table.name}" WHERE rowid > ? AND ({may}) ORDER BY rowid '
                              f"LIMIT ?", (last, batch_rows)).fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


# ------------------------------------------------------------------ rewriting a row


def update_row(conn: Connection, table: Table, new: Mapping[str, Any], key: Sequence[Any]) -> None:
    """Set the columns ``new`` names in the row of ``table`` whose key is ``key``."""
    where = " AND ".join(f'"{k}" = ?' for k in table.key)
    sets = ", ".join(f'"{c}" = ?' for c in new)
    conn.execute(f'UPDATE "{table.name}" SET {sets} WHERE {where}', (*new.values(), *key))


def session_exists(conn: Connection, session_id: str) -> bool:
    return conn.execute("SELECT 1 FROM chat_sessions WHERE session_id = ?", (session_id,)).fetchone() is not None


def merge_session(conn: Connection, old: str, into: str) -> None:
    """The chat session ``old`` becomes part of ``into``: its counts and times add to it, its row goes."""
    conn.execute("UPDATE chat_sessions SET message_count = message_count + o.message_count, "
                 "first_event_at = min(first_event_at, o.first_event_at), last_event_at = max(last_event_at, "
                 "o.last_event_at), generation = max(chat_sessions.generation, o.generation) FROM "
                 "(SELECT * FROM chat_sessions WHERE session_id = ?) AS o WHERE chat_sessions.session_id = ?",
                 (old, into))
    conn.execute("DELETE FROM chat_sessions WHERE session_id = ?", (old,))


# ------------------------------------------------------------------ what is made again from a rewritten row


def embed_event_again(conn: Connection, rowid: int, now: float) -> None:
    """The event's chunks (and their vectors) go and it waits to be embedded again."""
    conn.execute("DELETE FROM event_chunks WHERE event_rowid = ?", (rowid,))
    EMBEDDING_JOBS.requeue(conn, "SELECT ?", (rowid,), now)


def reindex_next_turn(conn: Connection, rowid: int) -> None:
    """The next turn of the event's session indexes it as its context: index that turn again (its trigger)."""
    conn.execute("UPDATE fact_events SET content = content WHERE id = (SELECT n.id FROM fact_events n, "
                 "fact_events e WHERE e.id = ? AND e.session_id IS NOT NULL AND n.session_id = e.session_id "
                 "AND (n.timestamp > e.timestamp OR (n.timestamp = e.timestamp AND n.id > e.id)) "
                 "ORDER BY n.timestamp, n.id LIMIT 1)", (rowid,))


def retitle_episodes_of(conn: Connection, rowid: int) -> None:
    """The episodes the event is evidence of take their title again from their first (user) event."""
    conn.execute("UPDATE l2_episodes SET title = coalesce((SELECT substr(e.content, 1, 80) FROM l2_evidence v "
                 "JOIN fact_events e ON e.id = v.event_rowid WHERE v.kind = 'episode' AND v.row_key = "
                 "CAST(l2_episodes.episode_id AS TEXT) ORDER BY e.author_type != 'user', e.timestamp LIMIT 1), "
                 "title) WHERE episode_id IN (SELECT CAST(row_key AS INTEGER) FROM l2_evidence WHERE kind = "
                 "'episode' AND event_rowid = ?)", (rowid,))


def drop_entity_vector(conn: Connection, entity_id: int) -> None:
    """The entity is embedded again under its new name."""
    with contextlib.suppress(Exception):        # no vector table before the first embedding
        conn.execute(f"DELETE FROM {ENTITY_VEC_TABLE} WHERE rowid = ?", (entity_id,))


def embed_edge_again(conn: Connection, rowid: int) -> None:
    conn.execute("UPDATE kg_edges SET embedded = 0 WHERE rowid = ?", (rowid,))
