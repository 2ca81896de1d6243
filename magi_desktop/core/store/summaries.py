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
    """Delete the summaries citing these events or drawn over a window holding one, and those built on them;
    reschedule their windows (the events must still be stored).
    Returns how many summaries went. Runs inside the caller's write transaction."""
    rowids = list(event_rowids)
    if not rowids:
        return 0
    marks = ", ".join("?" * len(rowids))
    # A summary links a sample of its window's events, but its counts, topics and "Mentioned" come from all of
    # them: every temporal or thematic summary whose window holds one of these events goes (as forget does).
    ids = {s for (s,) in conn.execute(
        f"SELECT summary_id FROM summary_event_links WHERE event_rowid IN ({marks}) UNION "
        f"SELECT s.summary_id FROM fact_events e JOIN l3_summaries s ON s.summary_type IN ('temporal', 'thematic') "
        f"AND s.window_start <= e.timestamp AND e.timestamp < s.window_end WHERE e.id IN ({marks})", rowids * 2)}
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
