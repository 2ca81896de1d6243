"""L3 summaries: the ones that must be drawn again because an event they cite changed, and what recall reads.

A summary quotes its events: when one of them is replaced by a new version (a moved meeting,
:mod:`.supersede`) or its stored text changes (a secret redacted after the fact, ``reredact.py``), the
summary — and the week and month summaries built on it — would keep the old words. They are deleted and
their windows summarised again on the next L3 run, from what the memory holds then (as forget does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

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


# ------------------------------------------------------------------ what recall reads

class SummaryFilter(NamedTuple):
    """A WHERE clause over ``l3_summaries s`` and its arguments, shared by every L3 recall ranking."""

    clause: str
    args: list[Any]


def recall_filter(now: float, window_start: float, window_end: float, summary_type: str | None) -> SummaryFilter:
    """Summaries closed by ``now`` whose window overlaps the question's, of one type if given."""
    where = ["s.window_end <= ?", "s.window_end > ?", "s.window_start < ?"]
    args: list[Any] = [now, window_start, window_end]
    if summary_type is not None:
        where.append("s.summary_type = ?")
        args.append(summary_type)
    return SummaryFilter(" AND ".join(where), args)


def summary_rows(conn: Connection, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """By id: (summary_id, summary_type, summary_category, granularity, title, content, window_start,
    window_end)."""
    return {r[0]: r for r in conn.execute(
        "SELECT summary_id, summary_type, summary_category, granularity, title, content, window_start, "
        f"window_end FROM l3_summaries WHERE summary_id IN ({', '.join('?' * len(ids))})", list(ids))}


def summaries_mentioning(conn: Connection, tokens: Sequence[str], where: SummaryFilter, limit: int) -> list[int]:
    """Ids of the summaries whose title or text contains any of ``tokens``, newest window first."""
    likes = " OR ".join("lower(s.title || ' ' || s.content) LIKE ?" for _ in tokens)
    return [r[0] for r in conn.execute(
        f"SELECT s.summary_id FROM l3_summaries s WHERE ({likes}) AND {where.clause} "
        "ORDER BY s.window_end DESC LIMIT ?", [*(f"%{t.lower()}%" for t in tokens), *where.args, limit])]


def thematic_summaries_about(conn: Connection, names: Sequence[str], where: SummaryFilter, limit: int) -> list[int]:
    """Ids of the thematic summaries about one of these (lower-case) entity names, newest window first."""
    return [r[0] for r in conn.execute(
        "SELECT s.summary_id FROM l3_summaries s WHERE s.summary_type = 'thematic' AND "
        f"lower(json_extract(s.data_json, '$.entity')) IN ({', '.join('?' * len(names))}) AND {where.clause} "
        "ORDER BY s.window_end DESC LIMIT ?", [*names, *where.args, limit])]


def temporal_windows(conn: Connection, where: SummaryFilter) -> list[tuple[int, str, float, float]]:
    """(summary_id, granularity, window_start, window_end) of the temporal summaries passing ``where``."""
    return conn.execute(
        "SELECT s.summary_id, s.granularity, s.window_start, s.window_end FROM l3_summaries s "
        f"WHERE s.summary_type = 'temporal' AND {where.clause}", where.args).fetchall()


def cited_events(conn: Connection, summary_id: int, now: float, limit: int) -> list[tuple[str, str | None, str | None]]:
    """(event_id, source_item_id, session_id) of the events a summary cites, recorded by ``now``: the user's
    own first, then newest."""
    return conn.execute(
        "SELECT e.event_id, e.source_item_id, e.session_id FROM summary_event_links l JOIN fact_events e "
        "ON e.id = l.event_rowid WHERE l.summary_id = ? AND e.recorded_at <= ? "
        "ORDER BY (e.author_type = 'user') DESC, e.timestamp DESC LIMIT ?", (summary_id, now, limit)).fetchall()
