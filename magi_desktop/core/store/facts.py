"""The facts agents saved (``memory_facts``): remember()'s writes behind the quote gate, merges, the user's
deletions and the listing (architecture §9). Full-text search over them is in :mod:`.search`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .connection import Connection, placeholders


def fact_status(conn: Connection, fact_id: int) -> str | None:
    """A fact's status, or None when there is no such fact."""
    row = conn.execute("SELECT status FROM memory_facts WHERE fact_id = ?", (fact_id,)).fetchone()
    return row[0] if row else None


def add_stated_fact(conn: Connection, content: str, quote: str, scope: str, category: str, project: str | None,
                    source_message_id: str, session_id: str | None, generation: int | None, now: float) -> int:
    """A new active fact the user stated (its quote passed the gate); returns its id."""
    fact_id = conn.execute(
        "INSERT INTO memory_facts (content, quote, scope, category, project, evidence_type, source_message_id, "
        "session_id, generation, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'stated', ?, ?, ?, ?, ?)",
        (content, quote, scope, category, project, source_message_id, session_id, generation, now, now)).lastrowid
    assert fact_id is not None
    return fact_id


def supersede_fact(conn: Connection, fact_id: int, by: int, now: float) -> None:
    conn.execute("UPDATE memory_facts SET status = 'superseded', superseded_by = ?, updated_at = ? "
                 "WHERE fact_id = ?", (by, now, fact_id))


def active_facts_to_merge(conn: Connection, fact_ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """(fact_id, evidence_type, source_message_id, accepting_message_id, session_id, scope, category, project,
    proposal_message_id, generation, quote) of those of ``fact_ids`` that are active."""
    return conn.execute(
        f"SELECT fact_id, evidence_type, source_message_id, accepting_message_id, session_id, scope, category, "
        f"project, proposal_message_id, generation, quote FROM memory_facts WHERE status = 'active' "
        f"AND fact_id IN ({placeholders(len(fact_ids))})",
        list(fact_ids)).fetchall()


def add_merged_fact(conn: Connection, values: Sequence[Any]) -> int:
    """A new fact from a merge: ``values`` are (content, scope, category, project, evidence_type,
    source_message_id, accepting_message_id, session_id, proposal_message_id, generation, quote, created_at,
    updated_at). Returns its id."""
    merged = conn.execute(
        "INSERT INTO memory_facts (content, scope, category, project, evidence_type, source_message_id, "
        "accepting_message_id, session_id, proposal_message_id, generation, quote, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", tuple(values)).lastrowid
    assert merged is not None
    return merged


def mark_merged(conn: Connection, fact_ids: Sequence[int], into: int, now: float) -> None:
    conn.executemany("UPDATE memory_facts SET status = 'merged', superseded_by = ?, updated_at = ? WHERE fact_id = ?",
                     [(into, now, fact_id) for fact_id in fact_ids])


def fact_rows(conn: Connection, columns: Sequence[str], status: str | None = None,
              fact_id: int | None = None) -> list[tuple[Any, ...]]:
    """These columns of the facts with ``status`` and/or ``fact_id`` (None: any), oldest first."""
    where = {"status = ?": status, "fact_id = ?": fact_id}
    where = {clause: value for clause, value in where.items() if value is not None}
    sql = f"SELECT {', '.join(columns)} FROM memory_facts" + (
        f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY fact_id"
    return conn.execute(sql, list(where.values())).fetchall()


def delete_fact(conn: Connection, fact_id: int, now: float) -> bool:
    """Erase a fact's words, keeping a row marked ``deleted``; False when it was gone already."""
    return conn.execute("UPDATE memory_facts SET status = 'deleted', content = '(deleted by the user)', "
                        "quote = NULL, updated_at = ? WHERE fact_id = ? AND status != 'deleted'",
                        (now, fact_id)).rowcount > 0


def active_fact_with_content(conn: Connection, content_lower: str, project: str) -> int | None:
    """The id of an active fact with this content (compared lower case) in ``project`` ("": none), if any."""
    row = conn.execute("SELECT fact_id FROM memory_facts WHERE status = 'active' AND lower(content) = ? "
                       "AND coalesce(project, '') = ?", (content_lower, project)).fetchone()
    return row[0] if row else None


def add_extracted_fact(conn: Connection, values: Sequence[Any]) -> int | None:
    """A new fact an extraction found: ``values`` are (content, quote, scope, category, project, evidence_type,
    source_message_id, accepting_message_id, proposal_message_id, session_id, generation, extraction_id,
    created_at, updated_at). Returns its id."""
    return conn.execute(
        "INSERT INTO memory_facts (content, quote, scope, category, project, evidence_type, source_message_id, "
        "accepting_message_id, proposal_message_id, session_id, generation, extraction_id, created_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", tuple(values)).lastrowid


def facts_not_deleted(conn: Connection) -> list[dict[str, Any]]:
    """Every fact not deleted by the user, all its columns (whatever the schema adds), by id."""
    cursor = conn.execute("SELECT * FROM memory_facts WHERE status != 'deleted' ORDER BY fact_id")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]
