"""Hot and cold tiers of the L1 events (issue 20; architecture "Aggregation and tiers").

Recent, often recalled, strongly evidenced content stays hot; old raw data that L3 has summarised and that
nothing current rests on becomes cold. A cold event keeps its row in ``fact_events`` — evidence trails, window
lists, a summary's drill-down, forget and export read it as before — but its full-text terms and chunk vectors
move to the cold indexes (``fact_events_cold_fts``, ``chunk_vectors_cold``), which default recall does not
search. So the indexes a question scans grow with what is hot, not with all of history.

An event goes cold when, measured against the ``now`` a tiering run is given (a replay behaves like live use):
it happened more than ``cold_after_days`` ago, a temporal summary (day, week or month) covers it, and it is
none of what must stay findable — the user's own words (kept hot for good: tier 2), the messages a saved
fact points at, or one of the newest events a current belief cites. A current belief whose newest evidence
is cold (L2 reached an old event late, what replaced the belief was forgotten) brings it back (warm).
Embedding and L2 work on a cold event as on any other: its vectors are written to the cold table. Each run
looks at a bounded number of rows, from where the last one stopped, so its cost does not grow with the
memory either.

Plain functions over a connection; :func:`run` takes the write lock in short transactions of its own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from .connection import Connection, placeholders

if TYPE_CHECKING:
    from . import Database

HOT, COLD, KEPT_HOT = 0, 1, 2
DEFAULT_COLD_AFTER_DAYS = 180.0
COLD_AFTER_KEY = "cold_after_days"          # memory_meta: the age (days) past which events may go cold; 0 = never
SCANNED_TO_KEY = "tiering_scanned_to"       # memory_meta: "timestamp id" the last run's scan reached
LAST_RUN_KEY = "tiering_ran_at"             # memory_meta: the ``now`` of the last run
SCAN_LIMIT = 20_000                          # hot rows a run looks at
BELIEF_EVIDENCE_KEPT = 5                     # a current belief's newest cited events stay hot
MOVE_BATCH = 500                             # events moved per write transaction: the lock is held briefly
_CURRENT_ASSERTION = "('tentative', 'corroborated', 'stable')"
_COLD_FTS = "fact_events_cold_fts"
_HOT_FTS = "fact_events_fts"
# store/vectors.py's names (it imports this module)
_VEC, _COLD_VEC, _PENDING = "chunk_vectors", "chunk_vectors_cold", "chunk_vectors_pending"


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def month_of(timestamp: float) -> int:
    """The calendar month (UTC) an event happened in, as months since year 0: the partition of the cold chunk
    table (store/vectors.py) its vectors are in, so a question about an old window scans that window's months."""
    moment = _EPOCH + timedelta(seconds=timestamp)     # fromtimestamp fails before 1970 on Windows
    return moment.year * 12 + moment.month - 1


def months_between(start: float, end: float) -> list[int]:
    """The partitions of the events that happened in [start, end)."""
    return list(range(month_of(start), month_of(max(start, end - 1e-3)) + 1))


@dataclass(frozen=True)
class TieringReport:
    """What one tiering run did."""

    examined: int = 0        # hot rows looked at
    moved_cold: int = 0
    kept_hot: int = 0        # the user's own words, marked hot for good
    warmed: int = 0          # cold events a belief observed again cites, back in the hot indexes
    cutoff: float | None = None   # events before this may go cold; None when tiering is off

    def to_dict(self) -> dict[str, Any]:
        return {"examined": self.examined, "moved_cold": self.moved_cold, "kept_hot": self.kept_hot,
                "warmed": self.warmed, "cutoff": self.cutoff}


def _meta(conn: Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def _set_meta(conn: Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO memory_meta (key, value) VALUES (?, ?)", (key, value))


def cold_after_days(conn: Connection) -> float:
    """The age in days past which events may go cold (0: never)."""
    value = _meta(conn, COLD_AFTER_KEY)
    return DEFAULT_COLD_AFTER_DAYS if value is None else float(value)


def set_cold_after_days(conn: Connection, days: float) -> None:
    """Set the age past which events may go cold (0 turns tiering off; cold events stay cold until
    :func:`warm_all`). Call inside a write transaction."""
    if days < 0:
        raise ValueError("cold_after_days must be 0 (never) or a positive number of days")
    _set_meta(conn, COLD_AFTER_KEY, repr(float(days)))


def sizes(conn: Connection) -> dict[str, int]:
    """How many events are hot (undecided or for good) and cold."""
    counts = dict(conn.execute("SELECT tier, count(*) FROM fact_events GROUP BY tier").fetchall())
    return {"hot": counts.get(HOT, 0) + counts.get(KEPT_HOT, 0), "cold": counts.get(COLD, 0),
            "kept_hot": counts.get(KEPT_HOT, 0)}


def has_cold(conn: Connection) -> bool:
    """Whether any event is cold (the cold index has a row)."""
    return conn.execute(f"SELECT 1 FROM {_COLD_FTS} LIMIT 1").fetchone() is not None


def reaches_cold(conn: Connection, start: float, now: float) -> bool:
    """Whether a question about a window from ``start`` (asked at ``now``) may need the cold tier: the window
    begins before the age events go cold at, and some event is cold."""
    days = cold_after_days(conn)
    return days > 0 and start < now - days * 86_400 and has_cold(conn)


def is_cold(conn: Connection, rowids: Sequence[int]) -> set[int]:
    """Which of these events are cold."""
    found: set[int] = set()
    for start in range(0, len(rowids), 900):
        part = list(rowids[start:start + 900])
        found.update(r for (r,) in conn.execute(
            f"SELECT id FROM fact_events WHERE tier = {COLD} AND id IN ({placeholders(len(part))})", part))
    return found


def _vector_tables(conn: Connection) -> bool:
    return conn.execute("SELECT count(*) FROM sqlite_master WHERE name IN (?, ?)", (_VEC, _COLD_VEC)).fetchone()[0] == 2


def _cold_by_month(conn: Connection) -> bool:
    """Whether the cold chunk table has its month partitions (vector layout 3). One made before keeps its shape
    while the memory's model is missing (vectors paused, the index not opened); store/vectors.py rebuilds it, each
    chunk in its month, when the memory next opens with its model."""
    declared = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (_COLD_VEC,)).fetchone()
    return declared is not None and "partition key" in declared[0]


def _move(conn: Connection, rowids: Sequence[int] | set[int], to: int) -> None:
    """Move these events' index rows to the tier ``to`` (COLD or HOT) and mark them; inside a transaction."""
    rowids = sorted(rowids)
    if not rowids:
        return
    marks = placeholders(len(rowids))
    source, target = (_HOT_FTS, _COLD_FTS) if to == COLD else (_COLD_FTS, _HOT_FTS)
    conn.execute(f"DELETE FROM {target} WHERE rowid IN ({marks})", list(rowids))   # a half-done move, redone
    conn.execute(
        f"INSERT INTO {target} (rowid, content, context) SELECT e.id, "
        "magi_fts_index(e.content, json_extract(e.metadata_json, '$.timeline.speaker')), c.context "
        f"FROM fact_events e JOIN fact_events_context c ON c.id = e.id WHERE e.id IN ({marks})", list(rowids))
    conn.execute(f"DELETE FROM {source} WHERE rowid IN ({marks})", list(rowids))
    if _vector_tables(conn):
        from_vec, to_vec = (_VEC, _COLD_VEC) if to == COLD else (_COLD_VEC, _VEC)
        happened = dict(conn.execute(
            f"SELECT c.chunk_id, e.timestamp FROM event_chunks c JOIN fact_events e ON e.id = c.event_rowid "
            f"WHERE c.event_rowid IN ({marks})", list(rowids)).fetchall())
        chunks = sorted(happened)
        # One rowid at a time: vec0 answers "rowid = ?" from its rowid index, "rowid IN (…)" by a scan.
        rows = [row for chunk in chunks for row in conn.execute(
            f"SELECT rowid, embedding, scope_code, occurred_at, event_rowid FROM {from_vec} WHERE rowid = ?",
            (chunk,))]
        conn.executemany(f"DELETE FROM {to_vec} WHERE rowid = ?", [(c,) for c in chunks])
        if to == COLD and _cold_by_month(conn):      # into the partition of the month the event happened in
            conn.executemany(f"INSERT INTO {to_vec} (rowid, month, embedding, scope_code, occurred_at, event_rowid) "
                             "VALUES (?, ?, ?, ?, ?, ?)",
                             [(row[0], month_of(happened[row[0]]), *row[1:]) for row in rows])
        else:
            conn.executemany(f"INSERT INTO {to_vec} (rowid, embedding, scope_code, occurred_at, event_rowid) "
                             "VALUES (?, ?, ?, ?, ?)", rows)
        conn.executemany(f"DELETE FROM {from_vec} WHERE rowid = ?", [(c,) for c in chunks])
        # The approximate index (store/ann.py) holds hot chunks: a chunk gone cold is no longer pending for it;
        # one come back is, until the next file holds it.
        conn.executemany(f"DELETE FROM {_PENDING} WHERE chunk_id = ?", [(c,) for c in chunks])
        recorded = conn.execute("SELECT ann_file FROM vector_index WHERE name = 'chunks'").fetchone()
        if to == HOT and recorded is not None and recorded[0] is not None:       # an index exists or is building
            conn.executemany(f"INSERT INTO {_PENDING} (chunk_id, embedding) VALUES (?, ?)",
                             [(row[0], row[1]) for row in rows])
    conn.execute(f"UPDATE fact_events SET tier = ? WHERE id IN ({marks})", [to, *rowids])


_CURRENT_BELIEF = (
    "((ev.kind = 'edge' AND EXISTS (SELECT 1 FROM kg_edges k WHERE k.triple_id = ev.row_key AND k.status = 'active'))"
    " OR (ev.kind = 'assertion' AND EXISTS (SELECT 1 FROM tom_trait_assertions a "
    f"     WHERE a.assertion_id = CAST(ev.row_key AS INTEGER) AND a.status IN {_CURRENT_ASSERTION})))")


def _eligible(conn: Connection, rowids: Sequence[int]) -> list[int]:
    """Those of these old hot events that may go cold: in a summarised day, week or month (a history back-filled
    after L3's look-back has month summaries only), not a saved fact's message, and not
    among the newest BELIEF_EVIDENCE_KEPT events a current belief cites — a behavioural edge may rest on a
    thousand visits; its newest few stay findable, the rest are counted by it and by the summaries."""
    marks = placeholders(len(rowids))
    candidates = [r for (r,) in conn.execute(
        "SELECT e.id FROM fact_events e "
        f"WHERE e.id IN ({marks}) AND e.tier = {HOT} "
        "AND EXISTS (SELECT 1 FROM l3_summaries s WHERE s.summary_type = 'temporal' "
        "            AND s.granularity IN ('day', 'week', 'month') "
        "            AND s.window_start <= e.timestamp AND s.window_end > e.timestamp) "
        "AND e.event_id NOT IN (SELECT source_message_id FROM memory_facts WHERE source_message_id IS NOT NULL "
        "  UNION SELECT accepting_message_id FROM memory_facts WHERE accepting_message_id IS NOT NULL "
        "  UNION SELECT proposal_message_id FROM memory_facts WHERE proposal_message_id IS NOT NULL)",
        list(rowids))]
    if not candidates:
        return []
    beliefs = conn.execute(
        f"SELECT DISTINCT ev.kind, ev.row_key FROM l2_evidence ev WHERE ev.event_rowid IN "
        f"({placeholders(len(candidates))}) AND {_CURRENT_BELIEF}", candidates).fetchall()
    kept: set[int] = set()
    for kind, key in beliefs:          # the newest by rowid: the primary key's order, no sort
        kept.update(r for (r,) in conn.execute(
            "SELECT event_rowid FROM l2_evidence WHERE kind = ? AND row_key = ? ORDER BY event_rowid DESC LIMIT ?",
            (kind, key, BELIEF_EVIDENCE_KEPT)))
    return [r for r in candidates if r not in kept]


def _scan(conn: Connection, cutoff: float) -> tuple[list[tuple[float, int, str]], bool]:
    """Up to SCAN_LIMIT undecided hot events older than ``cutoff``, from where the last run stopped: (timestamp,
    rowid, author_type), and whether the scan reached the cutoff (the next run starts from the oldest again)."""
    position = _meta(conn, SCANNED_TO_KEY)
    after_ts, after_id = (float(position.split()[0]), int(position.split()[1])) if position else (float("-inf"), 0)
    rows = conn.execute(
        "SELECT timestamp, id, author_type FROM fact_events INDEXED BY fact_events_untiered "
        f"WHERE tier = {HOT} AND timestamp < ? AND (timestamp > ? OR (timestamp = ? AND id > ?)) "
        "ORDER BY timestamp, id LIMIT ?", (cutoff, after_ts, after_ts, after_id, SCAN_LIMIT)).fetchall()
    return rows, len(rows) < SCAN_LIMIT


def _warm_candidates(conn: Connection) -> list[int]:
    """Cold events among the newest a current belief cites — a belief current again (what replaced it was
    forgotten, the user confirmed it) whose evidence had gone cold. Bounded by the beliefs, not the events."""
    beliefs = conn.execute(
        "SELECT 'edge', triple_id FROM kg_edges WHERE status = 'active' UNION ALL "
        f"SELECT 'assertion', CAST(assertion_id AS TEXT) FROM tom_trait_assertions WHERE status IN {_CURRENT_ASSERTION}"
    ).fetchall()
    newest = [r for kind, key in beliefs for (r,) in conn.execute(
        "SELECT event_rowid FROM l2_evidence WHERE kind = ? AND row_key = ? ORDER BY event_rowid DESC LIMIT ?",
        (kind, key, BELIEF_EVIDENCE_KEPT))]
    return sorted(is_cold(conn, newest)) if newest else []


def run(db: Database, now: float | None = None) -> TieringReport:
    """One tiering run as of ``now``: warm the newest evidence of current beliefs, mark the user's own old
    words hot for good, and move up to SCAN_LIMIT rows' worth of eligible old events to the cold tier — in
    write transactions of MOVE_BATCH events, so a writer elsewhere waits for one batch at most."""
    now = time.time() if now is None else now
    reader = db.reader()
    days = cold_after_days(reader)
    if days <= 0:
        return TieringReport()
    cutoff = now - days * 86_400
    warm = _warm_candidates(reader)
    for start in range(0, len(warm), MOVE_BATCH):
        with db.transaction() as conn:
            _move(conn, is_cold(conn, warm[start:start + MOVE_BATCH]), HOT)
    rows, reached_cutoff = _scan(reader, cutoff)
    kept = [rowid for _, rowid, author in rows if author == "user"]
    others = [rowid for _, rowid, author in rows if author != "user"]
    moved = 0
    for start in range(0, len(kept), MOVE_BATCH):
        part = kept[start:start + MOVE_BATCH]
        with db.transaction() as conn:
            conn.execute(f"UPDATE fact_events SET tier = {KEPT_HOT} WHERE tier = {HOT} AND id IN "
                         f"({placeholders(len(part))})", part)
    for start in range(0, len(others), MOVE_BATCH):
        with db.transaction() as conn:
            chosen = _eligible(conn, others[start:start + MOVE_BATCH])
            if chosen:
                _move(conn, chosen, COLD)
            moved += len(chosen)
    with db.transaction() as conn:
        _set_meta(conn, SCANNED_TO_KEY, "" if reached_cutoff or not rows else f"{rows[-1][0]!r} {rows[-1][1]}")
        _set_meta(conn, LAST_RUN_KEY, repr(now))
    if moved or warm:
        from . import ann_build  # here: ann_build imports vectors, which imports this module

        # The index files drop what went cold and take what came back (unless another process holds the build claim:
        # its next fold does; readers meanwhile re-check every hit's tier).
        ann_build.maintain(db, fold_at=0)
    return TieringReport(examined=len(rows), moved_cold=moved, kept_hot=len(kept), warmed=len(warm), cutoff=cutoff)


def warm_all(db: Database) -> int:
    """Bring every cold event back to the hot indexes (tiering turned off for good, or a rebuild)."""
    cold = [r for (r,) in db.reader().execute(f"SELECT id FROM fact_events WHERE tier = {COLD} ORDER BY id")]
    for start in range(0, len(cold), MOVE_BATCH):
        with db.transaction() as conn:
            _move(conn, is_cold(conn, cold[start:start + MOVE_BATCH]), HOT)
    if cold:
        from . import ann_build  # here: ann_build imports vectors, which imports this module

        ann_build.maintain(db, fold_at=0)        # the index files take them back (or the claim holder's next fold does)
    return len(cold)
