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
from ..store import Database
from ..store.connection import Connection
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
    row = conn.execute("SELECT done_until FROM periodic_jobs WHERE job = 'l3:insights'").fetchone()
    since = (row[0] - SCAN_BACK_SECONDS) if row else 0.0
    written = {"state_change": 0, "contradiction_resolved": 0, "trend": 0, "task_reflection": 0}
    with db.transaction() as wconn:
        written["state_change"] = _state_changes(wconn, since, now)
        written["contradiction_resolved"] = _contradictions(wconn, since, now)
        written["trend"] = _trends(wconn, now)
        written["task_reflection"] = _reflections(wconn, since, now)
        wconn.execute("INSERT INTO periodic_jobs (job, done_until, last_run_at) VALUES ('l3:insights', ?, ?) "
                      "ON CONFLICT (job) DO UPDATE SET done_until = excluded.done_until, "
                      "last_run_at = excluded.last_run_at", (now, now))
    return written


def _insert(conn: Connection, category: str, key: str, start: float, end: float, title: str, content: str,
            data: dict, rowids: list[int], now: float) -> int:
    if conn.execute("SELECT 1 FROM l3_summaries WHERE window_key = ?", (key,)).fetchone():
        return 0
    summary_id = conn.execute(
        "INSERT INTO l3_summaries (summary_type, summary_category, granularity, window_key, window_start, window_end, "
        "title, content, data_json, event_count, fingerprint, model, created_at, updated_at) "
        "VALUES ('insight', ?, NULL, ?, ?, ?, ?, ?, ?, ?, '', 'rules', ?, ?)",
        (category, key, start, end, title, content, json.dumps(data, ensure_ascii=False), len(rowids), now,
         now)).lastrowid
    conn.executemany("INSERT OR IGNORE INTO summary_event_links (summary_id, event_rowid) VALUES (?, ?)",
                     [(summary_id, r) for r in dict.fromkeys(rowids)])
    return 1


def _evidence(conn: Connection, kind: str, key: str) -> list[int]:
    return [r[0] for r in conn.execute("SELECT event_rowid FROM l2_evidence WHERE kind = ? AND row_key = ?",
                                       (kind, key))]


def _state_changes(conn: Connection, since: float, now: float) -> int:
    rows = conn.execute(
        "SELECT o.assertion_id, e.name, o.trait, o.value, o.first_observed_at, n.assertion_id, n.value, "
        "n.first_observed_at FROM tom_trait_assertions o JOIN tom_trait_assertions n ON n.assertion_id = "
        "o.superseded_by JOIN entity_catalog e ON e.entity_id = o.entity_id WHERE o.status IN "
        "('superseded', 'overwritten') AND n.status != 'user_denied' AND o.retired_at >= ? AND o.retired_at <= ? "
        # Written ones are skipped in SQL: the reconcile callback scans every replaced row of any age.
        "AND NOT EXISTS (SELECT 1 FROM l3_summaries i WHERE i.window_key = "
        "'insight:state_change:' || o.assertion_id || ':' || n.assertion_id)",
        (since, now)).fetchall()
    written = 0
    for old_id, name, trait, old, first, new_id, new, changed in rows:
        who = "You" if name == "the user" else name
        relation = trait.replace("_", " ")
        title = f"{who}: {relation} changed from {old} to {new}"
        content = (f"State change: {who.lower() if who == 'You' else who} {relation} {old} (from {day_of(first)}) and "
                   f"then {new} (from {day_of(changed)}).")
        rowids = _evidence(conn, "assertion", str(old_id)) + _evidence(conn, "assertion", str(new_id))
        written += _insert(conn, "state_change", f"insight:state_change:{old_id}:{new_id}", first, changed, title,
                           content, {"trait": trait, "from": old, "to": new, "entity": name}, rowids, now)
    return written


def _contradictions(conn: Connection, since: float, now: float) -> int:
    rows = conn.execute(
        "SELECT o.triple_id, s.name, o.predicate, ob.name, o.first_observed_at, o.retired_at, o.retired_reason, "
        "n.triple_id, n.predicate, nb.name FROM kg_edges o JOIN kg_edges n ON n.triple_id = o.superseded_by "
        "JOIN entity_catalog s ON s.entity_id = o.subject_id JOIN entity_catalog ob ON ob.entity_id = o.object_id "
        "JOIN entity_catalog nb ON nb.entity_id = n.object_id "
        "WHERE o.retired_reason IN ('antonym', 'user_corrected') AND o.retired_at >= ? AND o.retired_at <= ? "
        "AND NOT EXISTS (SELECT 1 FROM l3_summaries i WHERE i.window_key = "
        "'insight:contradiction:' || o.triple_id || ':' || n.triple_id)",
        (since, now)).fetchall()
    written = 0
    for tid, subject, predicate, obj, first, retired, reason, new_tid, new_predicate, new_obj in rows:
        who = "You" if subject == "the user" else subject
        old_fact = f"{predicate.lower().replace('_', ' ')} {obj}"
        new_fact = f"{new_predicate.lower().replace('_', ' ')} {new_obj}"
        how = "you corrected it" if reason == "user_corrected" else "a later statement said the opposite"
        title = f"{who}: “{old_fact}” resolved as “{new_fact}”"
        content = (f"Contradiction resolved ({how}): {old_fact} (from {day_of(first)}) became {new_fact} "
                   f"({day_of(retired)}).")
        rowids = _evidence(conn, "edge", tid) + _evidence(conn, "edge", new_tid)
        written += _insert(conn, "contradiction_resolved", f"insight:contradiction:{tid}:{new_tid}", first, retired,
                           title, content, {"from": old_fact, "to": new_fact, "reason": reason}, rowids, now)
    return written


def _trends(conn: Connection, now: float) -> int:
    span = TREND_DAYS * 86400.0
    _, _, week = window_of("week", now)
    first = conn.execute("SELECT min(timestamp) FROM fact_events").fetchone()[0]
    if first is None or first > now - 2 * span:
        return 0                  # the memory does not reach back over both periods: a start is not a trend
    written = 0
    for source, recent, earlier in conn.execute(
            "SELECT source, sum(timestamp >= ?), sum(timestamp < ?) FROM fact_events WHERE timestamp >= ? "
            "AND timestamp < ? GROUP BY source", (now - span, now - span, now - 2 * span, now)).fetchall():
        if max(recent, earlier) < TREND_MIN_EVENTS:
            continue
        if earlier and recent / earlier < TREND_FACTOR and recent / earlier > 1 / TREND_FACTOR:
            continue
        direction = "rose" if recent > earlier else "fell"
        title = f"{source} activity {direction}: {earlier} → {recent} events (4 weeks vs the 4 before)"
        content = (f"Trend: {source} {direction} from {earlier} events in the four weeks before to {recent} in the "
                   f"last four weeks (to {day_of(now)}).")
        rowids = [r[0] for r in conn.execute(
            "SELECT id FROM fact_events WHERE source = ? AND timestamp >= ? AND timestamp < ? ORDER BY timestamp "
            "DESC LIMIT 20", (source, now - span, now))]
        written += _insert(conn, "trend", f"insight:trend:{source}:{week}", now - 2 * span, now, title, content,
                           {"source": source, "recent": recent, "earlier": earlier}, rowids, now)
    return written


def _reflections(conn: Connection, since: float, now: float) -> int:
    """A conversation that ended: what it was about, from its last six events."""
    written = 0
    for session_id, last in conn.execute(
            "SELECT session_id, max(timestamp) FROM fact_events WHERE session_id IS NOT NULL "
            "AND timestamp <= ? GROUP BY session_id HAVING max(timestamp) <= ? AND max(timestamp) >= ? "
            "AND count(*) >= ?", (now, now - SESSION_END_SECONDS, since - SESSION_END_SECONDS,
                                  REFLECTION_EVENTS)).fetchall():
        rows = conn.execute(
            "SELECT id, timestamp, author_type, content FROM fact_events WHERE session_id = ? AND timestamp <= ? "
            "AND evidence_class IN ('user_self_report', 'user_question', 'user_directive', 'assistant_response', "
            "'tool_result') ORDER BY timestamp DESC, id DESC LIMIT ?", (session_id, now, REFLECTION_EVENTS)).fetchall()
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
