"""``l2_endings``: which event ended which edge ("I quit my job at Acme", ``core/l2/endings.py``). Not evidence
for the fact: forgetting the ending brings the edge back, forgetting the fact's own message forgets it."""

from __future__ import annotations

from collections.abc import Sequence

from .connection import Connection, placeholders


def record_ending(conn: Connection, triple_id: str, event_rowid: int, ended_at: float) -> None:
    conn.execute("INSERT OR IGNORE INTO l2_endings (triple_id, event_rowid, ended_at) VALUES (?, ?, ?)",
                 (triple_id, event_rowid, ended_at))


def edges_ended_by(conn: Connection, event_rowids: Sequence[int]) -> list[str]:
    """The edges these events ended."""
    return [tid for (tid,) in conn.execute(
        f"SELECT DISTINCT triple_id FROM l2_endings WHERE event_rowid IN ({placeholders(len(event_rowids))})",
        event_rowids)]


def ended_edge_without_ending(conn: Connection, triple_id: str, reason: str) -> tuple[int, str, float] | None:
    """(subject_id, predicate, last_observed_at) of the edge if it is retired for ``reason`` and no ending holds
    it any more."""
    return conn.execute("SELECT subject_id, predicate, last_observed_at FROM kg_edges WHERE triple_id = ? AND "
                        "status = 'retired' AND retired_reason = ? AND NOT EXISTS (SELECT 1 FROM l2_endings "
                        "WHERE triple_id = ?)", (triple_id, reason, triple_id)).fetchone()


def move_endings(conn: Connection, old_tid: str, new_tid: str) -> None:
    """Copy an edge's endings onto the triple it is rewritten to (the old rows go with the old edge)."""
    conn.execute("INSERT OR IGNORE INTO l2_endings (triple_id, event_rowid, ended_at) SELECT ?, event_rowid, ended_at "
                 "FROM l2_endings WHERE triple_id = ?", (new_tid, old_tid))
