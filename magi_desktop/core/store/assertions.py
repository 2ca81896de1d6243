"""Theory-of-mind trait assertions (``tom_trait_assertions``): the reads recall makes. The L2 worker's writes
are still in ``core/l2`` (issue 18, item 2)."""

from __future__ import annotations

from .connection import Connection


def assertion_trait(conn: Connection, assertion_id: int) -> str | None:
    """The trait an assertion states, or None when it is gone."""
    row = conn.execute("SELECT trait FROM tom_trait_assertions WHERE assertion_id = ?", (assertion_id,)).fetchone()
    return row[0] if row else None
