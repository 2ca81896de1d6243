"""``chat_extraction``: one row per chat turn background fact extraction will read, marked with the run that read it
(``extraction_id``) and the claim of a run reading it now (``claim_id``). The extraction run's own reads and writes
are still in ``core/extraction`` (issue 18, item 2)."""

from __future__ import annotations

from typing import NamedTuple

from .connection import Connection

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
