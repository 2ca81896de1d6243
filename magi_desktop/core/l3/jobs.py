"""Running the L3 windows: every closed hour / day / week / month that has events gets one
summary, written once per window and again only if the window's events changed.

``periodic_jobs`` keeps how far each granularity has run, so a restart resumes there;
``window_key`` is unique, so no window is ever summarised twice. The last ``LOOKBACK``
windows are checked again on each run: events that arrive late (a collector's back-fill)
regenerate their window's summary; days, weeks and months of events stored since the last run but
older than that get theirs (LATE_GRANULARITIES).

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
from collections.abc import Callable, Sequence
from datetime import tzinfo
from typing import Any, TypeVar

from ..llm.base import LLMProvider
from ..store import Database, entities, l1, periodic_jobs, summaries
from ..store.connection import Connection
from ..store.generations import events_deleted
from . import insights as rule_insights
from .compress import compress
from .summarize import Draft, extractive, fingerprint, from_children, window_events, with_llm
from .windows import GRANULARITIES, SPAN_SECONDS, closed_windows, day_of, window_at

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
# Events stored since the last run that happened before its look-back (a collector's back-fill of a year of
# history, an import) get their days, weeks and months summarised too — extractively when older than the
# first run's reach (a year of days is not a year of model calls) — so long-range review has summaries to
# rest on and the events can go cold (store/tiers.py). Hours are not back-filled. The newest event rowid whose
# windows a complete run covered is kept (store/periodic_jobs.py).
LATE_GRANULARITIES = ("day", "week", "month")


def run(db: Database, llm: LLMProvider, now: float | None = None, tz: tzinfo | None = None,
        granularities: tuple[str, ...] = GRANULARITIES, insights: bool = True) -> dict[str, Any]:
    """Summarise the closed windows of ``granularities`` (in order: a week needs its days) and,
    with ``insights``, write the rule-made insights. Returns how many were written."""
    now = time.time() if now is None else now
    seen, newest = periodic_jobs.l3_seen_rowid(db.reader()), l1.newest_rowid(db.reader())
    late = l1.times_after_rowid(db.reader(), seen) if newest is not None and newest > seen else []
    complete: list[bool] = []
    report: dict[str, Any] = {g: _granularity(db, llm, g, now, tz, late, complete)
                              for g in GRANULARITIES if g in granularities}
    if newest is not None and all(complete) and set(LATE_GRANULARITIES) <= set(granularities):
        with db.transaction() as wconn:       # the late events' windows are summarised: look after them next time
            periodic_jobs.set_l3_seen_rowid(wconn, newest)
    if insights:
        report["insights"] = rule_insights.run(db, now)
    return report


def _granularity(db: Database, llm: LLMProvider, granularity: str, now: float, tz: tzinfo | None,
                 late: Sequence[float] = (), complete: list[bool] | None = None) -> int:
    conn = db.reader()
    first = l1.first_event_time(conn)
    if first is None:
        return 0
    job = f"l3:{granularity}"
    read_until = periodic_jobs.done_until(conn, job)
    since = (read_until - LOOKBACK * SPAN_SECONDS[granularity] if read_until is not None
             else now - BACKFILL_SECONDS[granularity])
    wants_llm = llm.name != "rules"
    if wants_llm and granularity in ("hour", "day"):
        waiting = summaries.oldest_temporal_window_marked(conn, granularity, "%" + LLM_PENDING)
        if waiting is not None:
            since = min(since, waiting)
    since = max(since, first)
    windows = list(closed_windows(granularity, since, now, tz))
    if granularity in LATE_GRANULARITIES:     # events stored since the last run that happened before it
        known = {key for _, _, key, _ in windows}
        windows = sorted({w for ts in late if ts < since and (w := window_at(granularity, ts, tz))[1] <= now
                          and w[2] not in known}) + windows
    oldest_asked = now - BACKFILL_SECONDS[granularity]
    written, done_until = 0, read_until if read_until is not None else 0.0
    # A summary is drawn on this read connection and written after: one drawn while a forget deleted events
    # may hold their words, so it is not written, and the job does not move past its window.
    deletions = events_deleted(conn)
    still = lambda c: events_deleted(c) == deletions  # noqa: E731
    skipped_from = None
    for start, end, key, label in windows:
        done_until = max(done_until, end)
        if granularity in ("hour", "day"):
            events = window_events(conn, start, end)
            if (mark := _fresh_mark(conn, key, events, fingerprint)) is None:
                continue
            previous = _previous(conn, granularity, start)
            draft = extractive(conn, label[0].upper() + label[1:], events, previous[0] if previous else None)
            if start >= oldest_asked:     # an older window (a late back-fill) keeps its extractive draft
                draft = with_llm(llm, draft, label, events, previous[1] if previous else None)
            if wants_llm and draft.model == "extractive" and start >= oldest_asked:
                mark += LLM_PENDING
                if _unchanged(conn, key, mark):
                    continue          # still waiting for the model: the stored draft stands
        else:
            children = _children(conn, start, end)
            if (mark := _fresh_mark(conn, key, children, _children_mark)) is None:
                continue
            peers = [json.loads(data) for data in summaries.temporal_data_before(conn, granularity, start, PEERS)]
            draft = from_children(label[0].upper() + label[1:], [(c[0], c[1], c[2]) for c in children], peers)
        if _write(db, granularity, key, start, end, draft, mark, now, still=still) is None:
            skipped_from = start if skipped_from is None else min(skipped_from, start)
            break             # a forget ran meanwhile: this window and the rest wait for the next run
        written += 1
        if granularity == "week":
            _themes(db, start, end, key, label, now, still)
    if skipped_from is not None:
        done_until = min(done_until, skipped_from)
    if complete is not None:
        complete.append(skipped_from is None)
    with db.transaction() as wconn:
        # A forget during the run moved done_until back (to summarise its windows again): that stays.
        periodic_jobs.record_run_unless_moved_back(wconn, job, done_until, now, read_until)
    return written


T = TypeVar("T")


def _fresh_mark(conn: Connection, key: str, parts: list[T], mark_of: Callable[[list[T]], str]) -> str | None:
    """The mark of what a window is drawn from, or None when it holds nothing or its summary already has
    that mark (nothing to write)."""
    if not parts:
        return None
    mark = mark_of(parts)
    return None if _unchanged(conn, key, mark) else mark


def _themes(db: Database, start: float, end: float, week_key: str, label: str, now: float,
            still: Callable[[Any], bool] | None = None) -> int:
    """Thematic summaries: the entities a week kept coming back to, each with the events about it."""
    conn = db.reader()
    top = entities.busiest_entities_between(conn, start, end, THEME_MIN_EVENTS, THEMES_PER_WEEK)
    written = 0
    for entity_id, name, _ in top:
        events = entities.events_mentioning_between(conn, entity_id, start, end)
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


def _unchanged(conn: Connection, key: str, mark: str) -> bool:
    return summaries.fingerprint_of(conn, key) == mark


def _previous(conn: Connection, granularity: str, start: float) -> tuple[dict, str] | None:
    """The data and text of the summary of the window just before (a day sees the previous day's)."""
    row = summaries.temporal_before(conn, granularity, start)
    if row is None or start - row[2] > SPAN_SECONDS[granularity] * 1.5:
        return None
    return json.loads(row[0]), row[1]


def _children(conn: Connection, start: float, end: float) -> list[tuple[int, dict, list[int], float]]:
    return [(sid, json.loads(data), summaries.cited_event_rowids(conn, sid), updated)
            for sid, data, updated in summaries.day_summaries_within(conn, start, end)]


def _write(db: Database, granularity: str | None, key: str, start: float, end: float, draft: Draft, mark: str,
           now: float, summary_type: str = "temporal", category: str = "activity_overview",
           still: Callable[[Any], bool] | None = None) -> int | None:
    """Store a summary; None (nothing written) when ``still`` says its window changed since it was read: the
    summary is drawn outside the write transaction, and a forget in between must not see its words kept."""
    with db.transaction() as conn:
        if still is not None and not still(conn):
            return None
        text = summaries.SummaryText(draft.title, draft.content, json.dumps(draft.data, ensure_ascii=False),
                                     sum(draft.data.get("sources", {}).values()), mark, draft.model)
        summary_id = summaries.write_summary(conn, summary_type, category, granularity, key, start, end, text, now,
                                             draft.links, draft.children)
    return summary_id
