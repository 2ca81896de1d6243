"""L3 summaries (``l3_summaries`` and its links to events and child summaries): what the L3 worker writes and
reads (``core/l3``), the ones that must be drawn again because an event they cite changed, and what recall reads.

A summary quotes its events: when one of them is replaced by a new version (a moved meeting,
:mod:`.supersede`) or its stored text changes (a secret redacted after the fact, ``reredact.py``), the
summary — and the week and month summaries built on it — would keep the old words. They are deleted and
their windows summarised again on the next L3 run, from what the memory holds then (as forget does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from .connection import Connection, placeholders

# readers the tests and layers share

class StoredSummary(NamedTuple):
    """One row of ``l3_summaries``, but for its data and timestamps."""

    summary_id: int
    summary_type: str
    summary_category: str
    granularity: str | None
    window_key: str
    window_start: float
    window_end: float
    title: str
    content: str
    event_count: int
    fingerprint: str          # what the window held when it was summarised (and whether the model still owes it)
    model: str                # "extractive", "rules" or the LLM's model


def stored_summaries(conn: Connection, *, summary_type: str | None = None, granularity: str | None = None,
                     category: str | None = None) -> list[StoredSummary]:
    """Every summary (only those of this type, granularity and category, when given), earliest window first."""
    where = [(column, value) for column, value in (("summary_type", summary_type), ("granularity", granularity),
                                                   ("summary_category", category)) if value is not None]
    clause = (" WHERE " + " AND ".join(f"{column} = ?" for column, _ in where)) if where else ""
    return [StoredSummary(*row) for row in conn.execute(
        "SELECT summary_id, summary_type, summary_category, granularity, window_key, window_start, window_end, "
        f"title, content, event_count, fingerprint, model FROM l3_summaries{clause} ORDER BY window_start, "
        "summary_id",
        [value for _, value in where])]


def summary_texts(conn: Connection, *, summary_type: str | None = None, granularity: str | None = None) -> list[str]:
    """The text of every summary (of one type, of one granularity, when given), earliest window first."""
    return [s.content for s in stored_summaries(conn, summary_type=summary_type, granularity=granularity)]


def cited_sources(conn: Connection, summary_id: int) -> list[tuple[str, str | None]]:
    """(source, source_item_id) of every event a summary links to."""
    return conn.execute("SELECT e.source, e.source_item_id FROM summary_event_links l JOIN fact_events e "
                        "ON e.id = l.event_rowid WHERE l.summary_id = ?", (summary_id,)).fetchall()


def dangling_links(conn: Connection) -> int:
    """How many summary→event links cite an event that is no longer stored (there should be none)."""
    return conn.execute("SELECT count(*) FROM summary_event_links l LEFT JOIN fact_events e ON "
                        "e.id = l.event_rowid WHERE e.id IS NULL").fetchone()[0]


def redraw_citing(conn: Connection, event_rowids: Iterable[int]) -> int:
    """Delete the summaries citing these events or drawn over a window holding one, and those built on them;
    reschedule their windows (the events must still be stored).
    Returns how many summaries went. Runs inside the caller's write transaction."""
    rowids = list(event_rowids)
    if not rowids:
        return 0
    marks = placeholders(len(rowids))
    # A summary links a sample of its window's events, but its counts, topics and "Mentioned" come from all of
    # them: every temporal or thematic summary whose window holds one of these events goes (as forget does).
    ids = {s for (s,) in conn.execute(
        f"SELECT summary_id FROM summary_event_links WHERE event_rowid IN ({marks}) UNION "
        f"SELECT s.summary_id FROM fact_events e JOIN l3_summaries s ON s.summary_type IN ('temporal', 'thematic') "
        f"AND s.window_start <= e.timestamp AND e.timestamp < s.window_end WHERE e.id IN ({marks})", rowids * 2)}
    frontier = set(ids)
    while frontier:                                   # the week and month summaries built on them too
        marks = placeholders(len(frontier))
        frontier = {p for (p,) in conn.execute(f"SELECT summary_id FROM summary_children WHERE child_id IN "
                                               f"({marks})", list(frontier))} - ids
        ids |= frontier
    if not ids:
        return 0
    marks = placeholders(len(ids))
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
    # the question's window and "now", when the clause is :func:`recall_filter`'s: the vector search applies
    # them inside its KNN (store/search.py ``nearest_summaries``)
    window: tuple[float, float, float] | None = None     # (now, start, end)


def recall_filter(now: float, window_start: float, window_end: float, summary_type: str | None) -> SummaryFilter:
    """Summaries closed by ``now`` whose window overlaps the question's, of one type if given."""
    where = ["s.window_end <= ?", "s.window_end > ?", "s.window_start < ?"]
    args: list[Any] = [now, window_start, window_end]
    if summary_type is not None:
        where.append("s.summary_type = ?")
        args.append(summary_type)
    return SummaryFilter(" AND ".join(where), args, (now, window_start, window_end))


def summary_rows(conn: Connection, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """By id: (summary_id, summary_type, summary_category, granularity, title, content, window_start,
    window_end)."""
    return {r[0]: r for r in conn.execute(
        "SELECT summary_id, summary_type, summary_category, granularity, title, content, window_start, "
        f"window_end FROM l3_summaries WHERE summary_id IN ({placeholders(len(ids))})", list(ids))}


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
        f"lower(json_extract(s.data_json, '$.entity')) IN ({placeholders(len(names))}) AND {where.clause} "
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


# ------------------------------------------------------------------ what L3 writes (core/l3)

def has_window(conn: Connection, window_key: str) -> bool:
    """Whether a summary or insight with this window key is stored."""
    return conn.execute("SELECT 1 FROM l3_summaries WHERE window_key = ?", (window_key,)).fetchone() is not None


def add_insight(conn: Connection, category: str, window_key: str, start: float, end: float, title: str,
                content: str, data_json: str, event_count: int, now: float) -> int:
    """Store a rule-made insight (no granularity, no fingerprint); returns its summary_id."""
    summary_id = conn.execute(
        "INSERT INTO l3_summaries (summary_type, summary_category, granularity, window_key, window_start, window_end, "
        "title, content, data_json, event_count, fingerprint, model, created_at, updated_at) "
        "VALUES ('insight', ?, NULL, ?, ?, ?, ?, ?, ?, ?, '', 'rules', ?, ?)",
        (category, window_key, start, end, title, content, data_json, event_count, now, now)).lastrowid
    assert summary_id is not None
    return summary_id


def link_events(conn: Connection, summary_id: int, event_rowids: Iterable[int]) -> None:
    """Link a summary to the events it cites (a link already there stays). An event gone since the summary was
    drawn on its snapshot is not linked: an activity block superseded by its next version while another
    process ingests (a forget meanwhile is caught before: the summary is not written at all)."""
    conn.executemany("INSERT OR IGNORE INTO summary_event_links (summary_id, event_rowid) "
                     "SELECT ?, id FROM fact_events WHERE id = ?", [(summary_id, r) for r in event_rowids])


# ------------------------------------------------------------------ what the rule insights read (core/l3/insights.py)

def state_changes_without_insight(conn: Connection, since: float, now: float) -> list[tuple[Any, ...]]:
    """(old assertion_id, entity name, trait, old value, old first_observed_at, new assertion_id, new value, new
    first_observed_at) of the assertions superseded or overwritten in [since, now] by one the user did not deny,
    that have no state-change insight yet."""
    return conn.execute(
        "SELECT o.assertion_id, e.name, o.trait, o.value, o.first_observed_at, n.assertion_id, n.value, "
        "n.first_observed_at FROM tom_trait_assertions o JOIN tom_trait_assertions n ON n.assertion_id = "
        "o.superseded_by JOIN entity_catalog e ON e.entity_id = o.entity_id WHERE o.status IN "
        "('superseded', 'overwritten') AND n.status != 'user_denied' AND o.retired_at >= ? AND o.retired_at <= ? "
        # Written ones are skipped in SQL: the reconcile callback scans every replaced row of any age.
        "AND NOT EXISTS (SELECT 1 FROM l3_summaries i WHERE i.window_key = "
        "'insight:state_change:' || o.assertion_id || ':' || n.assertion_id)",
        (since, now)).fetchall()


def contradictions_without_insight(conn: Connection, since: float, now: float) -> list[tuple[Any, ...]]:
    """(old triple_id, subject name, predicate, object name, first_observed_at, retired_at, retired_reason, new
    triple_id, new predicate, new object name) of the edges retired in [since, now] by an antonym or a user's
    correction, that have no contradiction insight yet."""
    return conn.execute(
        "SELECT o.triple_id, s.name, o.predicate, ob.name, o.first_observed_at, o.retired_at, o.retired_reason, "
        "n.triple_id, n.predicate, nb.name FROM kg_edges o JOIN kg_edges n ON n.triple_id = o.superseded_by "
        "JOIN entity_catalog s ON s.entity_id = o.subject_id JOIN entity_catalog ob ON ob.entity_id = o.object_id "
        "JOIN entity_catalog nb ON nb.entity_id = n.object_id "
        "WHERE o.retired_reason IN ('antonym', 'user_corrected') AND o.retired_at >= ? AND o.retired_at <= ? "
        "AND NOT EXISTS (SELECT 1 FROM l3_summaries i WHERE i.window_key = "
        "'insight:contradiction:' || o.triple_id || ':' || n.triple_id)",
        (since, now)).fetchall()


# ----------------------------------------------------------------- what the L3 windows read and write (core/l3/jobs.py)

def fingerprint_of(conn: Connection, window_key: str) -> str | None:
    """The fingerprint of the stored summary of a window, or None when there is none."""
    row = conn.execute("SELECT fingerprint FROM l3_summaries WHERE window_key = ?", (window_key,)).fetchone()
    return row[0] if row else None


def oldest_temporal_window_marked(conn: Connection, granularity: str, fingerprint_like: str) -> float | None:
    """The start of the oldest temporal summary of a granularity whose fingerprint is LIKE the pattern."""
    return conn.execute("SELECT min(window_start) FROM l3_summaries WHERE summary_type = 'temporal' AND "
                        "granularity = ? AND fingerprint LIKE ?", (granularity, fingerprint_like)).fetchone()[0]


def temporal_data_before(conn: Connection, granularity: str, start: float, limit: int) -> list[str]:
    """The data_json of the temporal summaries of a granularity starting before ``start``, newest first."""
    return [r[0] for r in conn.execute(
        "SELECT data_json FROM l3_summaries WHERE summary_type = 'temporal' AND granularity = ? "
        "AND window_start < ? ORDER BY window_start DESC LIMIT ?", (granularity, start, limit))]


def temporal_before(conn: Connection, granularity: str, start: float) -> tuple[str, str, float] | None:
    """(data_json, content, window_end) of the temporal summary of a granularity ending last by ``start``."""
    return conn.execute("SELECT data_json, content, window_end FROM l3_summaries WHERE summary_type = 'temporal' "
                        "AND granularity = ? AND window_end <= ? ORDER BY window_end DESC LIMIT 1",
                        (granularity, start)).fetchone()


def day_summaries_within(conn: Connection, start: float, end: float) -> list[tuple[int, str, float]]:
    """(summary_id, data_json, updated_at) of the day summaries inside [start, end], in window order."""
    return conn.execute("SELECT summary_id, data_json, updated_at FROM l3_summaries WHERE summary_type = 'temporal' "
                        "AND granularity = 'day' AND window_start >= ? AND window_end <= ? ORDER BY window_start",
                        (start, end)).fetchall()


def cited_event_rowids(conn: Connection, summary_id: int) -> list[int]:
    """Rowids of the events a summary links."""
    return [r[0] for r in conn.execute(
        "SELECT event_rowid FROM summary_event_links WHERE summary_id = ?", (summary_id,))]


class SummaryText(NamedTuple):
    """What a summary says and how it was made: the columns a redraw replaces."""

    title: str
    content: str
    data_json: str
    event_count: int
    fingerprint: str
    model: str


def write_summary(conn: Connection, summary_type: str, category: str, granularity: str | None, window_key: str,
                  start: float, end: float, text: SummaryText, now: float, links: Iterable[int],
                  children: Iterable[int]) -> int:
    """Store the summary of a window, or replace the stored one's text, links and children; returns its id."""
    row = conn.execute("SELECT summary_id FROM l3_summaries WHERE window_key = ?", (window_key,)).fetchone()
    if row is None:
        summary_id = conn.execute(
            "INSERT INTO l3_summaries (summary_type, summary_category, granularity, window_key, window_start, "
            "window_end, title, content, data_json, event_count, fingerprint, model, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (summary_type, category, granularity, window_key, start, end, *text, now, now)).lastrowid
        assert summary_id is not None
    else:
        summary_id = row[0]
        conn.execute("UPDATE l3_summaries SET title = ?, content = ?, data_json = ?, event_count = ?, "
                     "fingerprint = ?, model = ?, updated_at = ? WHERE summary_id = ?", (*text, now, summary_id))
        conn.execute("DELETE FROM summary_event_links WHERE summary_id = ?", (summary_id,))
        conn.execute("DELETE FROM summary_children WHERE summary_id = ?", (summary_id,))
    link_events(conn, summary_id, links)
    conn.executemany("INSERT OR IGNORE INTO summary_children (summary_id, child_id) VALUES (?, ?)",
                     [(summary_id, child) for child in children])
    return summary_id


# --------------------------------------------------------------------- what the agents' desk reads (services/agents)

def latest_summaries(conn: Connection, columns: Sequence[str], limit: int,
                     summary_type: str | None = None) -> list[tuple[Any, ...]]:
    """These columns of the latest summaries (of one type when given), newest window first."""
    where = "WHERE summary_type = ? " if summary_type else ""
    return conn.execute(
        f"SELECT {', '.join(columns)} FROM l3_summaries {where}ORDER BY window_end DESC, summary_id DESC "
        f"LIMIT ?", ([summary_type] if summary_type else []) + [limit]).fetchall()
