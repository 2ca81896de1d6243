"""Running the L3 windows: every closed hour / day / week / month that has events gets one
summary, written once per window and again only if the window's events changed.

``periodic_jobs`` keeps how far each granularity has run, so a restart resumes there;
``window_key`` is unique, so no window is ever summarised twice. The last ``LOOKBACK``
windows are checked again on each run: events that arrive late (a collector's back-fill)
regenerate their window's summary.

When the summarizer model fails (its endpoint down, its breaker open, a malformed answer) the
window keeps the extractive summary, marked ``LLM_PENDING`` in its fingerprint: every later run
reaches back to the oldest such window and asks the model again, until it answers. The provider's
breaker paces those retries; nothing half-written is ever stored.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from datetime import tzinfo
from typing import Any

from ..llm.base import LLMProvider
from ..store import Database
from ..store.generations import events_deleted
from . import insights as rule_insights
from .compress import compress
from .summarize import Draft, extractive, fingerprint, from_children, window_events, with_llm
from .windows import GRANULARITIES, SPAN_SECONDS, closed_windows, day_of

log = logging.getLogger(__name__)

# How far back the first run reaches, per granularity (a fresh install with months of back-filled
# history gets recent hours, not every hour since the first event).
BACKFILL_SECONDS = {"hour": 2 * 86400.0, "day": 60 * 86400.0, "week": 26 * 7 * 86400.0, "month": 730 * 86400.0}
LOOKBACK = 2
PEERS = 2
THEME_MIN_EVENTS = 5          # an entity mentioned this often in a week gets a thematic summary
THEMES_PER_WEEK = 5
THEME_LINKS = 60
LLM_PENDING = "+llm-pending"  # fingerprint suffix: the extractive draft stands in until the model answers


def run(db: Database, llm: LLMProvider, now: float | None = None, tz: tzinfo | None = None,
        granularities: tuple[str, ...] = GRANULARITIES, insights: bool = True) -> dict[str, Any]:
    """Summarise the closed windows of ``granularities`` (in order: a week needs its days) and,
    with ``insights``, write the rule-made insights. Returns how many were written."""
    now = time.time() if now is None else now
    report: dict[str, Any] = {g: _granularity(db, llm, g, now, tz) for g in GRANULARITIES if g in granularities}
    if insights:
        report["insights"] = rule_insights.run(db, now)
    return report


def _granularity(db: Database, llm: LLMProvider, granularity: str, now: float, tz: tzinfo | None) -> int:
    conn = db.reader()
    first = conn.execute("SELECT min(timestamp) FROM fact_events").fetchone()[0]
    if first is None:
        return 0
    job = f"l3:{granularity}"
    row = conn.execute("SELECT done_until FROM periodic_jobs WHERE job = ?", (job,)).fetchone()
    since = row[0] - LOOKBACK * SPAN_SECONDS[granularity] if row else now - BACKFILL_SECONDS[granularity]
    wants_llm = llm.name != "rules"
    if wants_llm and granularity in ("hour", "day"):
        waiting = conn.execute("SELECT min(window_start) FROM l3_summaries WHERE summary_type = 'temporal' AND "
                               "granularity = ? AND fingerprint LIKE ?", (granularity, "%" + LLM_PENDING)).fetchone()[0]
        if waiting is not None:
            since = min(since, waiting)
    since = max(since, first)
    written, done_until = 0, row[0] if row else 0.0
    # A summary is drawn on this read connection and written after: one drawn while a forget deleted events
    # may hold their words, so it is not written, and the job does not move past its window.
    deletions = events_deleted(conn)
    still = lambda c: events_deleted(c) == deletions  # noqa: E731
    skipped_from = None
    for start, end, key, label in closed_windows(granularity, since, now, tz):
        done_until = max(done_until, end)
        if granularity in ("hour", "day"):
            events = window_events(conn, start, end)
            if not events:
                continue
            mark = fingerprint(events)
            if _unchanged(conn, key, mark):
                continue
            previous = _previous(conn, granularity, start)
            draft = extractive(conn, label[0].upper() + label[1:], events, previous[0] if previous else None)
            draft = with_llm(llm, draft, label, events, previous[1] if previous else None)
            if wants_llm and draft.model == "extractive":
                mark += LLM_PENDING
                if _unchanged(conn, key, mark):
                    continue          # still waiting for the model: the stored draft stands
        else:
            children = _children(conn, start, end)
            if not children:
                continue
            mark = _children_mark(children)
            if _unchanged(conn, key, mark):
                continue
            peers = [json.loads(r[0]) for r in conn.execute(
                "SELECT data_json FROM l3_summaries WHERE summary_type = 'temporal' AND granularity = ? "
                "AND window_start < ? ORDER BY window_start DESC LIMIT ?", (granularity, start, PEERS))]
            draft = from_children(label[0].upper() + label[1:], [(c[0], c[1], c[2]) for c in children], peers)
        if _write(db, granularity, key, start, end, draft, mark, now, still=still) is None:
            skipped_from = start if skipped_from is None else min(skipped_from, start)
            break             # a forget ran meanwhile: this window and the rest wait for the next run
        written += 1
        if granularity == "week":
            _themes(db, start, end, key, label, now, still)
    if skipped_from is not None:
        done_until = min(done_until, skipped_from)
    read_until = row[0] if row else None
    with db.transaction() as wconn:
        # A forget during the run moved done_until back (to summarise its windows again): that stays.
        wconn.execute("INSERT INTO periodic_jobs (job, done_until, last_run_at) VALUES (?, ?, ?) "
                      "ON CONFLICT (job) DO UPDATE SET done_until = CASE WHEN ? IS NOT NULL AND done_until < ? "
                      "THEN done_until ELSE max(done_until, excluded.done_until) END, "
                      "last_run_at = excluded.last_run_at", (job, done_until, now, read_until, read_until))
    return written


def _themes(db: Database, start: float, end: float, week_key: str, label: str, now: float,
            still: Callable[[Any], bool] | None = None) -> int:
    """Thematic summaries: the entities a week kept coming back to, each with the events about it."""
    conn = db.reader()
    top = conn.execute(
        "SELECT c.entity_id, c.name, count(*) AS n FROM l1_event_entities l JOIN entity_catalog c "
        "ON c.entity_id = l.entity_id JOIN fact_events e ON e.id = l.event_rowid WHERE e.timestamp >= ? "
        "AND e.timestamp < ? AND c.status = 'active' AND c.name_key NOT LIKE '@%' GROUP BY c.entity_id "
        "HAVING n >= ? ORDER BY n DESC LIMIT ?", (start, end, THEME_MIN_EVENTS, THEMES_PER_WEEK)).fetchall()
    written = 0
    for entity_id, name, _ in top:
        events = conn.execute(
            "SELECT e.id, e.timestamp, e.source, e.content FROM l1_event_entities l JOIN fact_events e "
            "ON e.id = l.event_rowid WHERE l.entity_id = ? AND e.timestamp >= ? AND e.timestamp < ? "
            "ORDER BY e.timestamp, e.id", (entity_id, start, end)).fetchall()
        sources = Counter(e[2] for e in events)
        days = {day_of(e[1]) for e in events}
        first, last = events[0], events[-1]
        content = (f"{name} in {label}: {len(events)} events on {len(days)} day(s) — "
                   + ", ".join(f"{s} {n}" for s, n in sources.most_common())
                   + f". First: “{' '.join(first[3].split())[:120]}” ({day_of(first[1])}); "
                   f"last: “{' '.join(last[3].split())[:120]}” ({day_of(last[1])}).")
        mark = f"{len(events)}:{max(e[0] for e in events)}"
        key = f"thematic:{entity_id}:{week_key}"
        if _unchanged(conn, key, mark):
            continue
        links = [e[0] for e in compress(events, source=lambda e: e[2], key=lambda e: e[3], cap=THEME_LINKS)]
        draft = Draft(title=f"{name} — {label}", content=content,
                      data={"entity": name, "sources": dict(sources), "days": len(days)}, links=links)
        if _write(db, None, key, start, end, draft, mark, now, summary_type="thematic", category="topic",
                  still=still) is not None:
            written += 1
    return written


def _children_mark(children: list[tuple[int, dict, list[int], float]]) -> str:
    return ",".join(f"{cid}@{updated}" for cid, _, _, updated in children)


def _unchanged(conn, key: str, mark: str) -> bool:
    row = conn.execute("SELECT fingerprint FROM l3_summaries WHERE window_key = ?", (key,)).fetchone()
    return row is not None and row[0] == mark


def _previous(conn, granularity: str, start: float) -> tuple[dict, str] | None:
    """The data and text of the summary of the window just before (a day sees the previous day's)."""
    row = conn.execute("SELECT data_json, content, window_end FROM l3_summaries WHERE summary_type = 'temporal' "
                       "AND granularity = ? AND window_end <= ? ORDER BY window_end DESC LIMIT 1",
                       (granularity, start)).fetchone()
    if row is None or start - row[2] > SPAN_SECONDS[granularity] * 1.5:
        return None
    return json.loads(row[0]), row[1]


def _children(conn, start: float, end: float) -> list[tuple[int, dict, list[int], float]]:
    rows = conn.execute("SELECT summary_id, data_json, updated_at FROM l3_summaries WHERE summary_type = 'temporal' "
                        "AND granularity = 'day' AND window_start >= ? AND window_end <= ? ORDER BY window_start",
                        (start, end)).fetchall()
    return [(sid, json.loads(data), [r[0] for r in conn.execute(
        "SELECT event_rowid FROM summary_event_links WHERE summary_id = ?", (sid,))], updated)
        for sid, data, updated in rows]


def _write(db: Database, granularity: str | None, key: str, start: float, end: float, draft: Draft, mark: str,
           now: float, summary_type: str = "temporal", category: str = "activity_overview",
           still: Callable[[Any], bool] | None = None) -> int | None:
    """Store a summary; None (nothing written) when ``still`` says its window changed since it was read: the
    summary is drawn outside the write transaction, and a forget in between must not see its words kept."""
    with db.transaction() as conn:
        if still is not None and not still(conn):
            return None
        row = conn.execute("SELECT summary_id FROM l3_summaries WHERE window_key = ?", (key,)).fetchone()
        values = (draft.title, draft.content, json.dumps(draft.data, ensure_ascii=False),
                  sum(draft.data.get("sources", {}).values()), mark, draft.model, now)
        if row is None:
            summary_id = conn.execute(
                "INSERT INTO l3_summaries (summary_type, summary_category, granularity, window_key, window_start, "
                "window_end, title, content, data_json, event_count, fingerprint, model, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (summary_type, category, granularity, key, start, end, *values[:6], now, now)).lastrowid
        else:
            summary_id = row[0]
            conn.execute("UPDATE l3_summaries SET title = ?, content = ?, data_json = ?, event_count = ?, "
                         "fingerprint = ?, model = ?, updated_at = ? WHERE summary_id = ?", (*values, summary_id))
            conn.execute("DELETE FROM summary_event_links WHERE summary_id = ?", (summary_id,))
            conn.execute("DELETE FROM summary_children WHERE summary_id = ?", (summary_id,))
        conn.executemany("INSERT OR IGNORE INTO summary_event_links (summary_id, event_rowid) VALUES (?, ?)",
                         [(summary_id, rowid) for rowid in draft.links])
        conn.executemany("INSERT OR IGNORE INTO summary_children (summary_id, child_id) VALUES (?, ?)",
                         [(summary_id, child) for child in draft.children])
    return summary_id
