"""Who speaks a chat turn, as its stored metadata says (``fact_events.metadata_json``'s ``timeline.speaker`` and
``timeline.speaker_candidate``): the reads and writes of ``core/speakers.py``, which decides when a "Name:"
prefix becomes the turn's speaker."""

from __future__ import annotations

from collections.abc import Sequence

from .connection import Connection


def turns_spoken_by(conn: Connection, name: str, limit: int) -> list[int]:
    """Rowids of up to ``limit`` stored turns whose speaker is ``name``."""
    return [row[0] for row in conn.execute(
        "SELECT id FROM fact_events WHERE json_extract(metadata_json, '$.timeline.speaker') = ? LIMIT ?",
        (name, limit))]


def has_spoken(conn: Connection, name: str) -> bool:
    """Whether a stored turn has ``name`` as its speaker."""
    return conn.execute("SELECT 1 FROM fact_events WHERE json_extract(metadata_json, '$.timeline.speaker') = ? "
                        "LIMIT 1", (name,)).fetchone() is not None


def turns_waiting_for(conn: Connection, name: str) -> list[int]:
    """Rowids of the stored turns that wait with ``name`` as their speaker candidate."""
    return [row[0] for row in conn.execute(
        "SELECT id FROM fact_events WHERE json_extract(metadata_json, '$.timeline.speaker_candidate') = ?", (name,))]


def metadata_and_content(conn: Connection, rowid: int) -> tuple[str, str]:
    """(metadata_json, content) of a stored event."""
    return conn.execute("SELECT metadata_json, content FROM fact_events WHERE id = ?", (rowid,)).fetchone()


def set_metadata(conn: Connection, rows: Sequence[tuple[str, int]]) -> None:
    """Store each (metadata_json, rowid)."""
    conn.executemany("UPDATE fact_events SET metadata_json = ? WHERE id = ?", rows)


def project_again(conn: Connection, rowid: int) -> None:
    """An event whose L2 projection is done is queued to be projected afresh."""
    conn.execute("UPDATE l2_projection_jobs SET state = 'pending', attempts = 0, next_attempt_at = 0, "
                 "finished_at = NULL WHERE event_rowid = ? AND state = 'done'", (rowid,))
