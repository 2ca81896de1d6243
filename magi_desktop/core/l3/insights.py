"""Rule-template insights (architecture §7), no LLM: the input is already structured.

* **state_change** — an assertion replaced by another (lives in Shanghai → Jiaxing).
* **contradiction_resolved** — an edge retired by its antonym or a correction (likes → dislikes).
* **trend** — a source twice as busy, or half as busy, over the last four weeks as the four before.
* **task_reflection** — a conversation that has ended (quiet for ``SESSION_END_SECONDS``), from
  its last six events.

Each insight has a stable ``window_key``, so running again writes nothing new, and links to the
events behind it.
"""

from __future__ import annotations

import json

from ..session_constants import SESSION_IDLE_SECONDS
from ..store import Database, activity_blocks, l1, periodic_jobs, summaries
from ..store.connection import Connection
from ..store.evidence import evidence_events
from .windows import day_of, window_of

TREND_DAYS = 28
TREND_MIN_EVENTS = 10
TREND_FACTOR = 2.0
SESSION_END_SECONDS = SESSION_IDLE_SECONDS     # session_constants.py: a quiet conversation has ended
REFLECTION_EVENTS = 6
SCAN_BACK_SECONDS = 7 * 86400.0


def reconciled(db: Database, now: float) -> dict[str, int]:
    """Right after L2 reconciled a batch that replaced something: its state-change and
    contradiction insights now, not at the next scheduled run (the L2 reconcile callback)."""
    with db.transaction() as conn:
        # Retirement times are the events' times (an imported history may be years old): every
        # replaced row without its insight yet, whatever its time; written ones are skipped by key.
        return {"state_change": _state_changes(conn, float("-inf"), float("inf")),
                "contradiction_resolved": _contradictions(conn, float("-inf"), float("inf"))}


def run(db: Database, now: float) -> dict[str, int]:
    conn = db.reader()
    until = periodic_jobs.done_until(conn, "l3:insights")
    since = (until - SCAN_BACK_SECONDS) if until is not None else 0.0
    written = {"state_change": 0, "contradiction_resolved": 0, "trend": 0, "task_reflection": 0}
    with db.transaction() as wconn:
        written["state_change"] = _state_changes(wconn, since, now)
        written["contradiction_resolved"] = _contradictions(wconn, since, now)
        written["trend"] = _trends(wconn, now)
        written["task_reflection"] = _reflections(wconn, since, now)
        periodic_jobs.record_run(wconn, "l3:insights", now, now)
    return written


def _insert(conn: Connection, category: str, key: str, start: float, end: float, title: str, content: str,
            data: dict, rowids: list[int], now: float) -> int:
    if summaries.has_window(conn, key):
        return 0
    summary_id = summaries.add_insight(conn, category, key, start, end, title, content,
                                       json.dumps(data, ensure_ascii=False), len(rowids), now)
    summaries.link_events(conn, summary_id, dict.fromkeys(rowids))
    return 1


def _state_changes(conn: Connection, since: float, now: float) -> int:
    rows = summaries.state_changes_without_insight(conn, since, now)
    written = 0
    for old_id, name, trait, old, first, new_id, new, changed in rows:
        who = "You" if name == "the user" else name
        relation = trait.replace("_", " ")
        title = f"{who}: {relation} changed from {old} to {new}"
        content = (f"State change: {who.lower() if who == 'You' else who} {relation} {old} (from {day_of(first)}) and "
                   f"then {new} (from {day_of(changed)}).")
        rowids = evidence_events(conn, "assertion", str(old_id)) + evidence_events(conn, "assertion", str(new_id))
        written += _insert(conn, "state_change", f"insight:state_change:{old_id}:{new_id}", first, changed, title,
                           content, {"trait": trait, "from": old, "to": new, "entity": name}, rowids, now)
    return written


def _contradictions(conn: Connection, since: float, now: float) -> int:
    rows = summaries.contradictions_without_insight(conn, since, now)
    written = 0
    for tid, subject, predicate, obj, first, retired, reason, new_tid, new_predicate, new_obj in rows:
        who = "You" if subject == "the user" else subject
        old_fact = f"{predicate.lower().replace('_', ' ')} {obj}"
        new_fact = f"{new_predicate.lower().replace('_', ' ')} {new_obj}"
        how = "you corrected it" if reason == "user_corrected" else "a later statement said the opposite"
        title = f"{who}: “{old_fact}” resolved as “{new_fact}”"
        content = (f"Contradiction resolved ({how}): {old_fact} (from {day_of(first)}) became {new_fact} "
                   f"({day_of(retired)}).")
        rowids = evidence_events(conn, "edge", tid) + evidence_events(conn, "edge", new_tid)
        written += _insert(conn, "contradiction_resolved", f"insight:contradiction:{tid}:{new_tid}", first, retired,
                           title, content, {"from": old_fact, "to": new_fact, "reason": reason}, rowids, now)
    return written


def _trends(conn: Connection, now: float) -> int:
    span = TREND_DAYS * 86400.0
    _, _, week = window_of("week", now)
    first = l1.first_event_time(conn)
    if first is None or first > now - 2 * span:
        return 0                  # the memory does not reach back over both periods: a start is not a trend
    written = 0
    # The events themselves: an activity block (core/aggregation) is not one more visit besides its members.
    blocks = activity_blocks.blocks_per_source_around(conn, now - span, now - 2 * span, now)
    for source, recent, earlier in l1.events_per_source_around(conn, now - span, now - 2 * span, now):
        recent, earlier = recent - blocks.get(source, (0, 0))[0], earlier - blocks.get(source, (0, 0))[1]
        if max(recent, earlier) < TREND_MIN_EVENTS:
            continue
        if earlier and recent / earlier < TREND_FACTOR and recent / earlier > 1 / TREND_FACTOR:
            continue
        direction = "rose" if recent > earlier else "fell"
        title = f"{source} activity {direction}: {earlier} → {recent} events (4 weeks vs the 4 before)"
        content = (f"Trend: {source} {direction} from {earlier} events in the four weeks before to {recent} in the "
                   f"last four weeks (to {day_of(now)}).")
        rowids = l1.latest_event_rowids_of_source(conn, source, now - span, now, 20)
        written += _insert(conn, "trend", f"insight:trend:{source}:{week}", now - 2 * span, now, title, content,
                           {"source": source, "recent": recent, "earlier": earlier}, rowids, now)
    return written


def _reflections(conn: Connection, since: float, now: float) -> int:
    """A conversation that ended: what it was about, from its last six events."""
    written = 0
    for session_id, last in l1.sessions_ended_between(conn, now, since - SESSION_END_SECONDS,
                                                      now - SESSION_END_SECONDS, REFLECTION_EVENTS):
        rows = l1.last_session_steps(conn, session_id, now, REFLECTION_EVENTS)
        if len(rows) < REFLECTION_EVENTS:
            continue
        rows.reverse()
        asked = next((text for _, _, author, text in rows if author == "user"), rows[0][3])
        steps = "; ".join(f"{'you' if author == 'user' else author}: {' '.join(text.split())[:90]}"
                          for _, _, author, text in rows)
        title = f"Task reflection ({day_of(last)}): {' '.join(asked.split())[:80]}"
        content = f"Task reflection for the conversation of {day_of(rows[0][1])}, its last {len(rows)} steps — {steps}."
        written += _insert(conn, "task_reflection", f"insight:task_reflection:{session_id}:{int(last)}", rows[0][1],
                           last, title, content, {"session_id": session_id}, [r[0] for r in rows], now)
    return written
