"""L3 summaries that must be drawn again because an event they cite changed.

A summary quotes its events: when one of them is replaced by a new version (a moved meeting,
:mod:`.supersede`) or its stored text changes (a secret redacted after the fact, ``reredact.py``), the
summary — and the week and month summaries built on it — would keep the old words. They are deleted and
their windows summarised again on the next L3 run, from what the memory holds then (as forget does).
"""

from __future__ import annotations

from collections.abc import Iterable

from .connection import Connection


def redraw_citing(conn: Connection, event_rowids: Iterable[int]) -> int:
    """Delete the summaries citing these events and those built on them; reschedule their windows.
    Returns how many summaries went. Runs inside the caller's write transaction."""
    rowids = list(event_rowids)
    if not rowids:
        return 0
    marks = ", ".join("?" * len(rowids))
    ids = {s for (s,) in conn.execute(f"SELECT summary_id FROM summary_event_links WHERE event_rowid IN ({marks})",
                                      rowids)}
    frontier = set(ids)
    while frontier:                                   # the week and month summaries built on them too
        marks = ", ".join("?" * len(frontier))
        frontier = {p for (p,) in conn.execute(f"SELECT summary_id FROM summary_children WHERE child_id IN "
                                               f"({marks})", list(frontier))} - ids
        ids |= frontier
    if not ids:
        return 0
    marks = ", ".join("?" * len(ids))
    rows = conn.execute(f"SELECT summary_type, granularity, window_start FROM l3_summaries WHERE "
                        f"summary_id IN ({marks})", list(ids)).fetchall()
    conn.execute(f"DELETE FROM l3_summaries WHERE summary_id IN ({marks})", list(ids))
    for granularity, start_at in {(g, w) for t, g, w in rows if t == "temporal"}:
        conn.execute("UPDATE periodic_jobs SET done_until = min(done_until, ?) WHERE job = ?",
                     (start_at, f"l3:{granularity}"))
    return len(rows)
