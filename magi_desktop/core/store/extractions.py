"""Fact extraction's tables (architecture §9): which chat messages each session generation still has to give to
the extractor (``chat_extraction``, with the claims that keep two extractors apart) and the committed extractions
(``fact_extractions``). The retries and backoff are :data:`.queue.EXTRACTION_RETRIES`; the facts themselves are in
:mod:`.facts`. What the claims and commits mean is ``core/extraction/pipeline.py``'s."""

from __future__ import annotations

from typing import Any, NamedTuple

from .connection import Connection

_DUE = """
SELECT x.session_id, x.generation
FROM chat_extraction x JOIN fact_events e ON e.id = x.event_rowid
LEFT JOIN chat_sessions s ON s.session_id = x.session_id
LEFT JOIN extraction_retries r ON r.session_id = x.session_id AND r.generation = x.generation
WHERE x.extraction_id IS NULL AND (r.state IS NULL OR (r.state = 'pending' AND r.next_attempt_at <= :now))
GROUP BY x.session_id, x.generation
HAVING x.generation < coalesce(max(s.generation), 0)
    OR (max(e.timestamp) <= :idle AND max(e.ingested_at) <= :idle)
ORDER BY min(e.timestamp)
"""


def due_generations(conn: Connection, now: float, idle_since: float, limit: int | None = None) -> list[tuple[str, int]]:
    """(session_id, generation) with unextracted messages that ended, or whose last message is older than
    ``idle_since``, and are not waiting out a backoff; oldest first."""
    sql = _DUE + (" LIMIT :limit" if limit else "")
    return [(r[0], r[1]) for r in conn.execute(sql, {"now": now, "idle": idle_since, "limit": limit})]


def due_count(conn: Connection, now: float, idle_since: float) -> int:
    """How many session generations :func:`due_generations` would give without a limit."""
    return conn.execute(f"SELECT count(*) FROM ({_DUE})", {"now": now, "idle": idle_since}).fetchone()[0]


def held_count(conn: Connection, now: float) -> int:
    """Session generations an extractor has claimed and whose claim is live."""
    return conn.execute("SELECT count(*) FROM (SELECT DISTINCT session_id, generation FROM chat_extraction "
                        "WHERE extraction_id IS NULL AND claim_id IS NOT NULL AND claimed_until > ?)",
                        (now,)).fetchone()[0]


def unextracted_claims(conn: Connection, session_id: str,
                       generation: int) -> list[tuple[int, str | None, float | None]]:
    """(event_rowid, claim_id, claimed_until) of a generation's messages no extraction consumed yet."""
    return conn.execute("SELECT event_rowid, claim_id, claimed_until FROM chat_extraction WHERE session_id = ? "
                        "AND generation = ? AND extraction_id IS NULL", (session_id, generation)).fetchall()


def claim(conn: Connection, session_id: str, generation: int, claim_id: str, until: float) -> None:
    """Put a generation's unextracted messages under the claim ``claim_id`` until ``until``."""
    conn.execute("UPDATE chat_extraction SET claim_id = ?, claimed_until = ? WHERE session_id = ? "
                 "AND generation = ? AND extraction_id IS NULL", (claim_id, until, session_id, generation))


def renew_claim(conn: Connection, claim_id: str, until: float) -> None:
    conn.execute("UPDATE chat_extraction SET claimed_until = ? WHERE claim_id = ?", (until, claim_id))


def release_claim(conn: Connection, claim_id: str) -> None:
    conn.execute("UPDATE chat_extraction SET claim_id = NULL, claimed_until = NULL WHERE claim_id = ?", (claim_id,))


def generation_messages(conn: Connection, session_id: str, generation: int | None) -> list[tuple[Any, ...]]:
    """(rowid, event_id, timestamp, content_type, content, metadata_json, extraction_id) of every message of a
    session generation (None: the messages without one, which only an import can hold), in order."""
    return conn.execute(
        "SELECT e.id, e.event_id, e.timestamp, e.content_type, e.content, e.metadata_json, x.extraction_id "
        "FROM chat_extraction x JOIN fact_events e ON e.id = x.event_rowid "
        "WHERE x.session_id = ? AND x.generation IS ? ORDER BY e.timestamp, e.id", (session_id, generation)).fetchall()


def claimed_count(conn: Connection, claim_id: str) -> int:
    """How many unextracted messages the claim still holds."""
    return conn.execute("SELECT count(*) FROM chat_extraction WHERE claim_id = ? AND extraction_id IS NULL",
                        (claim_id,)).fetchone()[0]


def unclaimed_count(conn: Connection, session_id: str, generation: int, claim_id: str) -> int:
    """How many unextracted messages of the generation the claim does not hold (arrived after it was taken)."""
    return conn.execute("SELECT count(*) FROM chat_extraction WHERE session_id = ? AND generation = ? "
                        "AND extraction_id IS NULL AND (claim_id IS NULL OR claim_id != ?)",
                        (session_id, generation, claim_id)).fetchone()[0]


def add_extraction(conn: Connection, session_id: str, generation: int, extractor: str, segments: int,
                   message_count: int, first_at: float, last_at: float, episode: str, now: float) -> int:
    """A new extraction with an empty report (:func:`save_report` fills it); returns its id."""
    extraction_id = conn.execute(
        "INSERT INTO fact_extractions (session_id, generation, extractor, segments, message_count, first_at, "
        "last_at, episode, report_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{}', ?)",
        (session_id, generation, extractor, segments, message_count, first_at, last_at, episode, now)).lastrowid
    assert extraction_id is not None
    return extraction_id


def save_report(conn: Connection, extraction_id: int, report_json: str) -> None:
    conn.execute("UPDATE fact_extractions SET report_json = ? WHERE extraction_id = ?", (report_json, extraction_id))


def mark_extracted(conn: Connection, claim_id: str, extraction_id: int) -> None:
    """The claim's messages are consumed by the extraction (and the claim released)."""
    conn.execute("UPDATE chat_extraction SET extraction_id = ?, claim_id = NULL, claimed_until = NULL "
                 "WHERE claim_id = ?", (extraction_id, claim_id))


def latest_extractions(conn: Connection, limit: int) -> list[tuple[Any, ...]]:
    """(extraction_id, session_id, generation, extractor, segments, message_count, first_at, last_at, episode,
    report_json, created_at) of the committed extractions, newest first."""
    return conn.execute(
        "SELECT extraction_id, session_id, generation, extractor, segments, message_count, first_at, last_at, "
        "episode, report_json, created_at FROM fact_extractions ORDER BY extraction_id DESC LIMIT ?",
        (limit,)).fetchall()


# readers the tests and layers share

class ExtractionMarks(NamedTuple):
    """How many chat turns a finished run read, and how many a run holds a claim on now."""

    extracted: int
    claimed: int


def extraction_marks(conn: Connection) -> ExtractionMarks:
    """How many chat turns carry an extraction's mark, and how many a claim."""
    return ExtractionMarks(*conn.execute(
        "SELECT count(extraction_id), count(claim_id) FROM chat_extraction").fetchone())


def marks_without_extraction(conn: Connection) -> int:
    """How many chat turns name an extraction that is not stored (there should be none)."""
    return conn.execute(
        "SELECT count(*) FROM chat_extraction WHERE extraction_id IS NOT NULL AND extraction_id "
        "NOT IN (SELECT extraction_id FROM fact_extractions)").fetchone()[0]
