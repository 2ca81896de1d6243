"""``l2_evidence``: the events behind each L2 row (an assertion, an edge, an episode): the reads L3 makes. The L2
worker's writes are still in ``core/l2`` (issue 18, item 2)."""

from __future__ import annotations

from .connection import Connection


def evidence_events(conn: Connection, kind: str, row_key: str) -> list[int]:
    """Rowids of the events behind one L2 row of ``kind`` ('assertion', 'edge', 'episode')."""
    return [r[0] for r in conn.execute("SELECT event_rowid FROM l2_evidence WHERE kind = ? AND row_key = ?",
                                       (kind, row_key))]
