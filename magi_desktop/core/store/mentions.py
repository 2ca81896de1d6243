"""The times an event mentions (``event_mentioned_times``, written at ingest by ``core/mentioned_times.py``),
matched against a question's calendar window: the April turn about "last month" is in a March window."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .connection import Connection, placeholders

WINDOW_SLACK_DAYS = 31      # a question window matches mentions up to this long, or up to its own length


def mentioning_rowids_sql() -> str:
    """A SELECT of the rowids of the events mentioning a time inside a window (params: :func:`mention_params`)."""
    # A mention no longer than the slack that ends after the window starts began at most the slack before it:
    # that lower bound keeps the index range to the window's neighbourhood, not every earlier mention.
    return ("SELECT m.event_rowid FROM event_mentioned_times m WHERE m.start < ? AND m.start > ? "
            "AND m.end > ? AND m.end - m.start <= ?")


def mention_sql(alias: str = "e") -> str:
    """SQL true when event ``alias`` mentions a time inside a window (params: :func:`mention_params`)."""
    return f"{alias}.id IN ({mentioning_rowids_sql()})"


def mention_params(start: float, end: float) -> list[float]:
    slack = max(end - start, WINDOW_SLACK_DAYS * 86400)
    return [end, start - slack, start, slack]


def mentioning_rowids(conn: Connection, start: float, end: float) -> list[int]:
    """The rowids of the events mentioning a time in [start, end), ascending."""
    return [row[0] for row in conn.execute(
        f"SELECT DISTINCT event_rowid FROM ({mentioning_rowids_sql()}) ORDER BY event_rowid",
        mention_params(start, end))]


def about_window(conn: Connection, rowids: Iterable[int], start: float, end: float) -> set[int]:
    """Which of ``rowids`` mention a time in [start, end)."""
    rowids = list(rowids)
    if not rowids:
        return set()
    marks = placeholders(len(rowids))
    return {row[0] for row in conn.execute(
        f"SELECT e.id FROM fact_events e WHERE e.id IN ({marks}) AND {mention_sql('e')}",
        [*rowids, *mention_params(start, end)])}


def add_mentioned_times(conn: Connection, rows: Sequence[tuple[int, float, float]]) -> None:
    """Record (event_rowid, start, end) windows events mention (a window already recorded is kept once)."""
    conn.executemany("INSERT OR IGNORE INTO event_mentioned_times (event_rowid, start, end) VALUES (?, ?, ?)", rows)
