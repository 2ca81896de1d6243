"""What an import of an export writes and checks (``core/importer.py`` and its loaders ``core/import_*.py``),
inside the caller's write transaction: the user's state row by row (the dedupe secret, sessions' generations,
extractions, facts, forget receipts, reviews to replay), the lookups that check each row's references, and the
checks and counts of the finished import. The events themselves go through :mod:`.l1` as at ingest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .connection import Connection, placeholders
from .exports import quote_name

# --------------------------------------------------------------------- the import as a whole (importer.py)

def has_rows(conn: Connection, table: str) -> bool:
    return conn.execute(f"SELECT 1 FROM {quote_name(table)} LIMIT 1").fetchone() is not None


def defer_foreign_keys(conn: Connection) -> None:
    """Foreign keys are checked at the commit (rows load table by table): see :func:`foreign_key_problem`."""
    conn.execute("PRAGMA defer_foreign_keys = ON")


def foreign_key_problem(conn: Connection) -> tuple[Any, ...] | None:
    """(table, rowid, parent table, fk index) of the first row that refers to a missing row, if any."""
    return conn.execute("PRAGMA foreign_key_check").fetchone()


def unextracted_generations(conn: Connection) -> int:
    """How many session generations have messages no extraction consumed."""
    return conn.execute("SELECT count(DISTINCT session_id || ':' || generation) FROM chat_extraction "
                        "WHERE extraction_id IS NULL").fetchone()[0]


def pending_replays(conn: Connection) -> int:
    """How many imported reviews wait to be applied to the rebuilt L2."""
    return conn.execute("SELECT count(*) FROM review_replays WHERE state = 'pending'").fetchone()[0]


# --------------------------------------------------------------------- events and traces (import_events.py)

def taken_values(conn: Connection, table: str, column: str, values: Sequence[Any]) -> set[Any]:
    """Those of ``values`` that a row of ``table`` (fact_events or runtime_traces) already has in ``column``."""
    return {r[0] for r in conn.execute(
        f"SELECT {column} FROM {table} WHERE {column} IN ({placeholders(len(values))})", list(values))}


def trace_rowid(conn: Connection, trace_id: str) -> int:
    """The rowid of a stored runtime trace."""
    return conn.execute("SELECT id FROM runtime_traces WHERE trace_id = ?", (trace_id,)).fetchone()[0]


def count_sources(conn: Connection) -> None:
    """Each source's counters made from the stored events and traces (accepted, last seen)."""
    conn.execute(
        "INSERT INTO source_counters (source, accepted, last_seen_at) SELECT source, count(*), max(ingested_at) "
        "FROM (SELECT source, ingested_at FROM fact_events UNION ALL SELECT source, ingested_at FROM "
        "runtime_traces) GROUP BY source")


# --------------------------------------------------------------------- the user's state (import_state.py)

def keep_idempotency_secret(conn: Connection, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO memory_meta (key, value) VALUES ('idempotency_secret', ?)", (value,))


def set_session_generation(conn: Connection, session_id: str, generation: int) -> bool:
    """Give a stored session its generation; False when no such session is stored."""
    return bool(conn.execute("UPDATE chat_sessions SET generation = ? WHERE session_id = ?",
                             (generation, session_id)).rowcount)


def session_exists(conn: Connection, session_id: Any) -> bool:
    return conn.execute("SELECT 1 FROM chat_sessions WHERE session_id = ?", (session_id,)).fetchone() is not None


def add_extraction(conn: Connection, values: Sequence[Any]) -> None:
    """An extraction as exported: ``values`` are (extraction_id, session_id, generation, extractor, segments,
    message_count, first_at, last_at, episode, created_at, report_json)."""
    conn.execute("INSERT INTO fact_extractions (extraction_id, session_id, generation, extractor, segments, "
                 "message_count, first_at, last_at, episode, created_at, report_json) VALUES "
                 "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", list(values))


def message_session(conn: Connection, event_rowid: Any) -> tuple[str, int] | None:
    """(session_id, the session's latest generation) of a stored chat message, if any."""
    return conn.execute("SELECT x.session_id, s.generation FROM chat_extraction x JOIN chat_sessions s "
                        "ON s.session_id = x.session_id WHERE x.event_rowid = ?", (event_rowid,)).fetchone()


def extraction_of_session_exists(conn: Connection, extraction_id: Any, session_id: str) -> bool:
    return conn.execute("SELECT 1 FROM fact_extractions WHERE extraction_id = ? AND session_id = ?",
                        (extraction_id, session_id)).fetchone() is not None


def mark_message(conn: Connection, event_rowid: Any, generation: int, extraction_id: Any) -> None:
    """A chat message's generation and extraction as exported, without a claim."""
    conn.execute("UPDATE chat_extraction SET generation = ?, extraction_id = ?, claim_id = NULL, "
                 "claimed_until = NULL WHERE event_rowid = ?", (generation, extraction_id, event_rowid))


def add_forget_receipt(conn: Connection, values: Sequence[Any]) -> None:
    """A finished forget's receipt as exported: ``values`` are (receipt_id, created_at, criteria_json,
    event_ids_json, counts_json, deleted_at, scrubbed_at, data_since, criteria_keyed)."""
    conn.execute("INSERT INTO forget_receipts (receipt_id, created_at, criteria_json, event_ids_json, "
                 "counts_json, state, deleted_at, scrubbed_at, data_since, criteria_keyed) "
                 "VALUES (?, ?, ?, ?, ?, 'done', ?, ?, ?, ?)", tuple(values))


# --------------------------------------------------------------------- facts (import_facts.py)

def imported_message(conn: Connection, pointer: str) -> tuple[Any, ...] | None:
    """(rowid, event_id, timestamp, session_id, content, content_type, metadata_json, generation, extraction_id)
    of the stored chat message ``pointer`` names (its event id first, else its source item id), if any."""
    return conn.execute(
        "SELECT e.id, e.event_id, e.timestamp, e.session_id, e.content, e.content_type, e.metadata_json, "
        "x.generation, x.extraction_id FROM fact_events e LEFT JOIN chat_extraction x ON x.event_rowid = e.id "
        "WHERE e.source = 'chat' AND (e.event_id = ? OR e.source_item_id = ?) ORDER BY e.event_id != ? LIMIT 1",
        (pointer, pointer, pointer)).fetchone()


def extraction_exists(conn: Connection, extraction_id: Any) -> bool:
    return conn.execute("SELECT 1 FROM fact_extractions WHERE extraction_id = ?",
                        (extraction_id,)).fetchone() is not None


def add_fact(conn: Connection, columns: Sequence[str], values: Sequence[Any]) -> None:
    """A fact as the import checked it, ``values`` in the order of ``columns``."""
    conn.execute(f"INSERT INTO memory_facts ({', '.join(columns)}) VALUES ({placeholders(len(columns))})",
                 list(values))


def facts_with_missing_successor(conn: Connection) -> list[int]:
    """Ids of the facts whose ``superseded_by`` names no stored fact."""
    return [fact_id for (fact_id,) in conn.execute(
        "SELECT fact_id FROM memory_facts WHERE superseded_by IS NOT NULL AND superseded_by NOT IN "
        "(SELECT fact_id FROM memory_facts)").fetchall()]


def clear_missing_successors(conn: Connection) -> None:
    conn.execute("UPDATE memory_facts SET superseded_by = NULL WHERE superseded_by IS NOT NULL AND "
                 "superseded_by NOT IN (SELECT fact_id FROM memory_facts)")


# --------------------------------------------------------------------- reviews (import_reviews.py)

def is_user_chat_statement(conn: Connection, rowid: int) -> bool:
    """Whether the event is a chat message the user wrote (a correction's own statement)."""
    return conn.execute("SELECT 1 FROM fact_events WHERE id = ? AND source = 'chat' AND author_type = 'user'",
                        (rowid,)).fetchone() is not None


def queue_replay(conn: Connection, action: str, target_json: str, detail_json: str, reviewed_at: float) -> None:
    conn.execute("INSERT INTO review_replays (action, target_json, detail_json, reviewed_at) VALUES "
                 "(?, ?, ?, ?)", (action, target_json, detail_json, reviewed_at))


def pending_replay_rows(conn: Connection) -> list[tuple[int, float, str]]:
    """(replay_id, reviewed_at, detail_json) of the reviews waiting to be applied."""
    return conn.execute(
        "SELECT replay_id, reviewed_at, detail_json FROM review_replays WHERE state = 'pending'").fetchall()


def first_event_ingested_after(conn: Connection, at: float) -> int:
    """The rowid of the first event stored after ``at``; none: the rowid the next stored event gets."""
    return conn.execute("SELECT coalesce((SELECT min(id) FROM fact_events WHERE ingested_at > ?), "
                        "(SELECT coalesce(max(id), 0) + 1 FROM fact_events))", (at,)).fetchone()[0]


def hold_replay(conn: Connection, replay_id: int, hold_rowid: int) -> None:
    """A replay waits until the events up to ``hold_rowid`` are projected."""
    conn.execute("UPDATE review_replays SET hold_rowid = ? WHERE replay_id = ?", (hold_rowid, replay_id))
