"""L1 rows: fact events, runtime traces, per-source counters.

Plain functions over a connection; the caller owns the transaction. Inserts
are bulk (executemany) after one dedupe lookup per batch; the FTS row is
written beside each event here, while the embedding job and the chat-session
index follow inserts, and FTS/vectors/sessions follow deletes, through
triggers (see migrations/0001), so they cannot drift.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ..contracts import MemoryEvent, tool_run_of
from ..text import fts_document, index_text
from . import supersede
from .connection import Connection, placeholders
from .json_text import compact_json

_EVENT_COLUMNS = (
    "event_id", "timestamp", "event_type", "source", "source_item_id", "idempotency_key", "session_id",
    "user_id", "content", "memory_domain", "ingest_target", "cognition_eligible", "retention_class",
    "author_type", "content_type", "evidence_class", "l1_retrieval_scope", "metadata_json", "ingested_at",
    "recorded_at", "natural_key",
)
_INSERT_EVENT = (
    f"INSERT INTO fact_events (id, {', '.join(_EVENT_COLUMNS)}) "
    f"VALUES (?, {placeholders(len(_EVENT_COLUMNS))})"
)
_INSERT_FTS = "INSERT INTO fact_events_fts (rowid, content, context) VALUES (?, ?, ?)"
_TRACE_COLUMNS = (
    "trace_id", "timestamp", "event_type", "source", "source_item_id", "idempotency_key", "session_id",
    "user_id", "content", "author_type", "evidence_class", "tool", "category", "ok", "duration_ms", "error",
    "metadata_json", "ingested_at",
)
_INSERT_TRACE = (
    f"INSERT INTO runtime_traces ({', '.join(_TRACE_COLUMNS)}) VALUES ({placeholders(len(_TRACE_COLUMNS))})"
)
_KEY_LOOKUP_CHUNK = 500

Key = tuple[str, str, str]


def _metadata_json(event: MemoryEvent) -> str:
    return compact_json(event.metadata)


def _previous_turns(conn: Connection, events: Sequence[MemoryEvent], documents: dict[str, str]) -> dict[str, str]:
    """For each chat turn, the FTS text of the turn before it in its session (from this batch or stored).

    ``documents`` holds the batch's own FTS texts, so a turn is segmented once, not again as context.
    """
    by_session: dict[str, list[MemoryEvent]] = {}
    for e in events:
        if e.session_id is not None and e.event_type == "CHAT_MESSAGE":
            by_session.setdefault(e.session_id, []).append(e)
    previous: dict[str, str] = {}
    for session_id, turns in by_session.items():
        turns.sort(key=lambda e: e.timestamp)
        row = conn.execute(
            "SELECT content, json_extract(metadata_json, '$.timeline.speaker'), author_type FROM fact_events "
            "WHERE session_id = ? AND timestamp <= ? ORDER BY timestamp DESC, id DESC LIMIT 1",
            (session_id, turns[0].timestamp)).fetchone()
        before = fts_document(index_text(row[0], row[1])) if row and row[2] == "user" else ""
        for turn in turns:
            if before:
                previous[turn.event_id] = before
            # Only a human turn is context: an assistant's words must not make a user turn match.
            before = documents[turn.event_id] if turn.author_type == "user" else ""
    return previous


def _speaker(event: MemoryEvent) -> str | None:
    return event.metadata.get("timeline", {}).get("speaker")


def _key(event: MemoryEvent) -> Key:
    return (event.source, event.event_type, event.idempotency_key)


def _lookup_keys(events: Sequence[MemoryEvent]) -> Iterable[Key]:
    for event in events:
        yield _key(event)
        for alias in event.dedupe_aliases:
            yield (event.source, event.event_type, alias)


class Stored(NamedTuple):
    """Where one submitted event ended up: its stored id and class (the earlier ones for a duplicate)."""

    event_id: str | None
    duplicate: bool
    evidence_class: str
    target: str
    rowid: int | None = None  # set for a newly inserted L1 event


def _stored(conn: Connection, table: str, id_column: str, target_sql: str, keys: Iterable[Key]) -> dict[Key, Stored]:
    """The rows already stored under the given dedupe keys."""
    by_group: dict[tuple[str, str], list[str]] = {}
    for source, event_type, key in set(keys):
        by_group.setdefault((source, event_type), []).append(key)
    found: dict[Key, Stored] = {}
    for (source, event_type), idem_keys in by_group.items():
        for first in range(0, len(idem_keys), _KEY_LOOKUP_CHUNK):
            chunk = idem_keys[first:first + _KEY_LOOKUP_CHUNK]
            rows = conn.execute(
                f"SELECT idempotency_key, {id_column}, evidence_class, {target_sql} FROM {table} "
                f"WHERE source = ? AND event_type = ? AND idempotency_key IN ({placeholders(len(chunk))})",
                (source, event_type, *chunk),
            )
            for idem_key, stored_id, evidence_class, target in rows:
                found[(source, event_type, idem_key)] = Stored(stored_id, True, evidence_class, target)
    return found


def _split_new(events: Sequence[MemoryEvent], stored: dict[Key, Stored]) -> tuple[list[Stored], list[MemoryEvent]]:
    """What became of each event, and the events to insert (the first of each key)."""
    results, fresh = [], []
    for event in events:
        key = _key(event)
        earlier = stored.get(key) or next(
            (stored[(key[0], key[1], alias)] for alias in event.dedupe_aliases if (key[0], key[1], alias) in stored),
            None)
        if earlier is not None:
            results.append(earlier)
        else:
            stored[key] = Stored(event.event_id, True, event.evidence_class, event.ingest_target)
            fresh.append(event)
            results.append(Stored(event.event_id, False, event.evidence_class, event.ingest_target))
    return results, fresh


def insert_events(conn: Connection, events: Sequence[MemoryEvent],
                  rowids: Sequence[int] | None = None) -> list[Stored]:
    """Store L1 events in bulk; say per event, in order, where it went.

    A duplicate (already stored, or earlier in the same batch) reports the
    stored row. Must run inside a write transaction: the dedupe check and the
    inserts rely on holding SQLite's write lock. ``rowids`` (one per event) are
    the ids to store them under — an import keeps the ids other rows name —
    else they follow the largest stored id.

    An event with a ``natural_key`` supersedes the stored version of its key (:mod:`.supersede`); a
    ``retire`` event retires it and is not stored itself (its target is ``"retired"``). A batch means
    what the same events sent one by one mean: it is stored in runs holding each key at most once.
    """
    results: list[Stored] = []
    run: list[int] = []
    keys: set[tuple[str, str]] = set()

    def store_run() -> None:
        if run:
            results.extend(_insert_versions(conn, [events[i] for i in run],
                                            None if rowids is None else [rowids[i] for i in run]))
        run.clear()
        keys.clear()

    for position, event in enumerate(events):
        key = (event.source, event.natural_key) if event.natural_key is not None else None
        if event.retire or key in keys:
            store_run()
        if event.retire:
            results.append(_retire(conn, event))
            continue
        run.append(position)
        if key is not None:
            keys.add(key)
    store_run()
    return results


def _retire(conn: Connection, event: MemoryEvent) -> Stored:
    assert event.natural_key is not None  # validate_payload: a retire names the key it retires
    key = (event.source, event.natural_key)
    old = supersede.live_versions(conn, [key]).get(key)
    if old is not None:
        supersede.retire(conn, old, event.ingested_at)
    # The retired event's id; None when nothing of that key was stored (nothing was retired, nothing stored).
    return Stored(old.event_id if old else None, False, event.evidence_class, supersede.RETIRED)


def _insert_versions(conn: Connection, events: Sequence[MemoryEvent],
                     rowids: Sequence[int] | None = None) -> list[Stored]:
    stored = _stored(conn, "fact_events", "event_id", "ingest_target", _lookup_keys(events))
    results, fresh = _split_new(events, stored)
    supersede.adopt_keys(conn, [(e.source, e.natural_key, r.event_id) for e, r in zip(events, results, strict=True)
                                if r.duplicate and e.natural_key is not None and r.event_id is not None])
    if not fresh:
        return results
    predecessors = _predecessors(conn, fresh) if any(e.natural_key is not None for e in fresh) else {}
    fresh = [e._replace(recorded_at=supersede.inherited_record_time(e, predecessors[e.event_id]))
             if e.event_id in predecessors else e for e in fresh]
    first_id = (conn.execute("SELECT max(id) FROM fact_events").fetchone()[0] or 0) + 1
    given = dict(zip((e.event_id for e in events), rowids, strict=True)) if rowids is not None else None
    ids = [given[e.event_id] if given else first_id + offset for offset, e in enumerate(fresh)]
    by_event = {e.event_id: rowid for e, rowid in zip(fresh, ids, strict=True)}
    results = [r._replace(rowid=by_event[e.event_id]) if not r.duplicate else r
               for e, r in zip(events, results, strict=True)]  # a new event's result carries its own id
    # Before the batch is inserted, so a turn's stored predecessor is never one of its own batch.
    documents = {e.event_id: fts_document(index_text(e.content, _speaker(e))) for e in fresh}
    contexts = _previous_turns(conn, fresh, documents)
    conn.executemany(_INSERT_EVENT, [
        (
            ids[offset], e.event_id, e.timestamp, e.event_type, e.source, e.source_item_id,
            e.idempotency_key, e.session_id, e.user_id, e.content, e.memory_domain, e.ingest_target,
            int(e.cognition_eligible), e.retention_class, e.author_type, e.content_type, e.evidence_class,
            e.l1_retrieval_scope, _metadata_json(e), e.ingested_at, e.visible_from,
            # A superseding version takes its key once its predecessor is gone (the key is unique).
            None if e.event_id in predecessors else e.natural_key,
        )
        for offset, e in enumerate(fresh)
    ])
    conn.executemany(_INSERT_FTS, [(ids[offset], documents[e.event_id], contexts.get(e.event_id, ""))
                                   for offset, e in enumerate(fresh)])
    counts = Counter((e.source, e.evidence_class, e.l1_retrieval_scope) for e in fresh)
    conn.executemany(
        "INSERT INTO l1_event_counts (source, evidence_class, l1_retrieval_scope, events) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET events = events + excluded.events",
        [(*key, n) for key, n in counts.items()],
    )
    for e in fresh:
        if e.event_id in predecessors:
            supersede.hand_over(conn, predecessors[e.event_id], by_event[e.event_id], e.event_id, e.ingested_at)
            conn.execute("UPDATE fact_events SET natural_key = ? WHERE id = ?", (e.natural_key, by_event[e.event_id]))
    return results


def _predecessors(conn: Connection, fresh: Sequence[MemoryEvent]) -> dict[str, supersede.Predecessor]:
    """The stored version each new event supersedes, by the new event's id (a run holds each key once)."""
    live = supersede.live_versions(conn, [(e.source, e.natural_key) for e in fresh if e.natural_key is not None])
    return {e.event_id: live[(e.source, e.natural_key)] for e in fresh
            if e.natural_key is not None and (e.source, e.natural_key) in live}


def insert_traces(conn: Connection, events: Sequence[MemoryEvent]) -> list[Stored]:
    """Store system_runtime events and tool executions in runtime_traces, deduped like events."""
    stored = _stored(conn, "runtime_traces", "trace_id", "'runtime_trace'", _lookup_keys(events))
    results, fresh = _split_new(events, stored)
    rows = []
    for e in fresh:
        run = tool_run_of(e)
        rows.append((
            e.event_id, e.timestamp, e.event_type, e.source, e.source_item_id, e.idempotency_key, e.session_id,
            e.user_id, e.content, e.author_type, e.evidence_class,
            run.tool if run else None, run.category if run else None,
            int(run.ok) if run else None, run.duration_ms if run else None, run.error if run else None,
            _metadata_json(e), e.ingested_at,
        ))
    conn.executemany(_INSERT_TRACE, rows)
    return results


def count_ingest(conn: Connection, source: str, *, accepted: int = 0, duplicates: int = 0,
                 rejected: int = 0, rejection: str | None = None, now: float | None = None) -> None:
    conn.execute(
        "INSERT INTO source_counters (source, accepted, duplicates, rejected, last_rejection, last_seen_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (source) DO UPDATE SET "
        "accepted = accepted + excluded.accepted, duplicates = duplicates + excluded.duplicates, "
        "rejected = rejected + excluded.rejected, "
        "last_rejection = coalesce(excluded.last_rejection, last_rejection), last_seen_at = excluded.last_seen_at",
        (source, accepted, duplicates, rejected, rejection, time.time() if now is None else now),
    )


# readers the tests and layers share

class ChatSession(NamedTuple):
    """One row of ``chat_sessions``, which the insert and delete triggers keep."""

    session_id: str
    first_event_at: float
    last_event_at: float
    message_count: int
    user_id: str


def chat_sessions(conn: Connection) -> list[ChatSession]:
    """Every chat session, by id."""
    return [ChatSession(*row) for row in conn.execute(
        "SELECT session_id, first_event_at, last_event_at, message_count, user_id FROM chat_sessions "
        "ORDER BY session_id")]


def event_rows(conn: Connection, *, natural_key: str | None = None,
               source_item_id: str | None = None) -> list[dict[str, Any]]:
    """Every stored event as :func:`event_row` gives it (only those of this natural key or source item, when
    given), by rowid."""
    where = [(column, value) for column, value in (("natural_key", natural_key), ("source_item_id", source_item_id))
             if value is not None]
    clause = (" WHERE " + " AND ".join(f"{column} = ?" for column, _ in where)) if where else ""
    return [_event_record(row) for row in conn.execute(
        f"SELECT id, {', '.join(_EVENT_COLUMNS)} FROM fact_events{clause} ORDER BY id", [v for _, v in where])]


def trace_rows(conn: Connection, *, source_item_id: str | None = None) -> list[dict[str, Any]]:
    """Every stored runtime trace (only those of one source item, when given) as a dict of its columns, its
    metadata parsed, by rowid."""
    clause, args = (" WHERE source_item_id = ?", [source_item_id]) if source_item_id is not None else ("", [])
    records = []
    for row in conn.execute(f"SELECT {', '.join(_TRACE_COLUMNS)} FROM runtime_traces{clause} ORDER BY rowid", args):
        record = dict(zip(_TRACE_COLUMNS, row, strict=True))
        record["metadata"] = json.loads(record.pop("metadata_json"))
        records.append(record)
    return records


# --------------------------------------------------------------------- reads


def event_row(conn: Connection, event_id: str) -> dict[str, Any] | None:
    cursor = conn.execute(f"SELECT id, {', '.join(_EVENT_COLUMNS)} FROM fact_events WHERE event_id = ?",
                          (event_id,))
    row = cursor.fetchone()
    return None if row is None else _event_record(row)


def _event_record(row: Sequence[Any]) -> dict[str, Any]:
    """A fact_events row (its rowid first, then ``_EVENT_COLUMNS``) as a dict, its metadata parsed."""
    record = dict(zip(["id", *_EVENT_COLUMNS], row, strict=True))
    record["metadata"] = json.loads(record.pop("metadata_json"))
    record["cognition_eligible"] = bool(record["cognition_eligible"])
    return record


def event_by_id_or_chat_item(conn: Connection, pointer: str) -> tuple[str, float, str | None] | None:
    """(event_id, timestamp, source_item_id) of the event whose id is ``pointer``, else of the chat message
    whose source item it is (a fact points at a message either way)."""
    row = conn.execute(
        "SELECT event_id, timestamp, source_item_id FROM fact_events WHERE event_id = ? UNION ALL "
        "SELECT event_id, timestamp, source_item_id FROM fact_events WHERE source = 'chat' AND "
        "source_item_id = ? LIMIT 1", (pointer, pointer)).fetchone()
    return tuple(row) if row else None


def latest_event_rowids_of_classes(conn: Connection, evidence_classes: Sequence[str], now: float,
                                   limit: int) -> list[int]:
    """Rowids of the newest events of these evidence classes that happened by ``now``, newest first."""
    marks = ", ".join(f"'{c}'" for c in evidence_classes)
    return [r[0] for r in conn.execute(
        f"SELECT e.id FROM fact_events e WHERE e.evidence_class IN ({marks}) AND e.timestamp <= ? "
        "ORDER BY e.timestamp DESC LIMIT ?", (now, limit))]


# Who a finding is from: a chat turn's speaker, or the actor of a sensor event someone else did (a colleague's
# commit: contracts.ACTOR), so retrieval never takes it for the user's own doing.
_WHO = ("coalesce(json_extract(metadata_json, '$.timeline.speaker'), "
        "json_extract(metadata_json, '$.timeline.provenance.actor'))")


def event_for_finding(conn: Connection, rowid: int) -> tuple[Any, ...] | None:
    """(event_id, timestamp, content, source, source_item_id, session_id, evidence_class, speaker) of an event."""
    return conn.execute(
        "SELECT event_id, timestamp, content, source, source_item_id, session_id, evidence_class, "
        f"{_WHO} FROM fact_events WHERE id = ?", (rowid,)).fetchone()


def candidate_rows(conn: Connection, rowids: Sequence[int]) -> list[tuple[Any, ...]]:
    """(id, event_id, timestamp, content, source, source_item_id, session_id, author_type, evidence_class,
    content_type, speaker or actor) of these events, in no particular order."""
    marks = placeholders(len(rowids))
    return conn.execute(
        "SELECT id, event_id, timestamp, content, source, source_item_id, session_id, author_type, evidence_class, "
        f"content_type, {_WHO} FROM fact_events WHERE id IN ({marks})",
        list(rowids)).fetchall()


def event_rowids_between(conn: Connection, scopes: Sequence[str], now: float, start: float, end: float,
                         limit: int) -> list[int]:
    """Rowids of the events of these scopes recorded by ``now`` that happen in [start, end), soonest first."""
    marks = placeholders(len(scopes))
    return [row[0] for row in conn.execute(
        f"SELECT id FROM fact_events WHERE l1_retrieval_scope IN ({marks}) AND recorded_at <= ? "
        "AND timestamp >= ? AND timestamp < ? ORDER BY timestamp, id LIMIT ?",
        [*scopes, now, start, end, limit])]


# What a window listing shows of an event (``core/retrieval/window_listing.py``).
_LISTING_COLUMNS = ("event_id, timestamp, content, source, source_item_id, session_id, author_type, evidence_class, "
                    + _WHO)


class EventFilter(NamedTuple):
    """A WHERE clause over ``fact_events`` and its arguments."""

    clause: str
    args: list[Any]


def window_filter(scopes: Sequence[str], start: float, end: float, now: float, ahead: bool) -> EventFilter:
    """Events of these scopes in [start, end) recorded by ``now``; unless the window is ahead, happened by then."""
    marks = placeholders(len(scopes))
    clause = (f"l1_retrieval_scope IN ({marks}) AND timestamp >= ? AND timestamp < ? AND recorded_at <= ?"
              + ("" if ahead else " AND timestamp <= ?"))
    return EventFilter(clause, [*scopes, start, end, now, *([] if ahead else [now])])


def events_per_source(conn: Connection, where: EventFilter) -> dict[str, int]:
    """How many events passing ``where`` each source holds."""
    # One range of fact_events_source_time (migration 0029) per source the memory holds (l1_event_counts):
    # the window's index entries alone, never the whole index.
    return {source: n for source, n in conn.execute(
        f"SELECT s.source, (SELECT count(*) FROM fact_events INDEXED BY fact_events_source_time "
        f"WHERE source = s.source AND {where.clause}) FROM (SELECT DISTINCT source FROM l1_event_counts "
        "WHERE events > 0) s", where.args).fetchall() if n}


def listed_events_of_source(conn: Connection, where: EventFilter, source: str, ahead: bool,
                            limit: int) -> list[tuple[Any, ...]]:
    """A source's events passing ``where`` (listing columns): the user's first, then soonest if ``ahead``
    else newest."""
    # The choice reads fact_events_source_time alone (migration 0029); only the chosen rows are fetched.
    order = f"(author_type = 'user') DESC, timestamp {'ASC' if ahead else 'DESC'}"
    return conn.execute(
        f"SELECT {_LISTING_COLUMNS} FROM fact_events WHERE id IN (SELECT id FROM fact_events "
        f"INDEXED BY fact_events_source_time WHERE {where.clause} AND source = ? ORDER BY {order} LIMIT ?) "
        f"ORDER BY {order}", [*where.args, source, limit]).fetchall()


def assistant_turns(conn: Connection, now: float, window: tuple[float, float] | None,
                    limit: int) -> list[tuple[Any, ...]]:
    """The assistant's conversation turns up to ``now`` (in [start, end) if a window is given), newest first,
    listing columns."""
    args: list[Any] = [now]
    where = "author_type = 'assistant' AND l1_retrieval_scope = 'conversation_only' AND timestamp <= ?"
    if window is not None:
        where += " AND timestamp >= ? AND timestamp < ?"
        args += [window[0], window[1]]
    return conn.execute(f"SELECT {_LISTING_COLUMNS} FROM fact_events WHERE {where} ORDER BY timestamp DESC LIMIT ?",
                        [*args, limit]).fetchall()


def stored_secret(conn: Connection, key: str) -> bytes | None:
    """The secret ``key`` of memory_meta, or None before its first use (a read: no lock taken)."""
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (key,)).fetchone()
    return bytes.fromhex(row[0]) if row else None


def meta_secret(conn: Connection, key: str) -> bytes:
    """A random per-database secret stored in memory_meta, created on first use."""
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (key,)).fetchone()
    if row is None:
        conn.execute("INSERT OR IGNORE INTO memory_meta (key, value) VALUES (?, ?)", (key, secrets.token_hex(32)))
        row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (key,)).fetchone()
    return bytes.fromhex(row[0])


# --------------------------------------------------------------------- what L3 reads (core/l3)

def newest_rowid(conn: Connection) -> int | None:
    """The highest event rowid, or None when there is no event."""
    return conn.execute("SELECT max(id) FROM fact_events").fetchone()[0]


def times_after_rowid(conn: Connection, rowid: int) -> list[float]:
    """When each event stored after rowid ``rowid`` happened (a rowid range: the new ones only)."""
    return [ts for (ts,) in conn.execute("SELECT timestamp FROM fact_events WHERE id > ?", (rowid,))]


def first_event_time(conn: Connection) -> float | None:
    """When the oldest stored event happened, or None when there is none."""
    return conn.execute("SELECT min(timestamp) FROM fact_events").fetchone()[0]


def events_per_source_around(conn: Connection, split: float, start: float, end: float) -> list[tuple[str, int, int]]:
    """(source, events in [split, end), events in [start, split)) of every source with an event in [start, end)."""
    return conn.execute(
        "SELECT source, sum(timestamp >= ?), sum(timestamp < ?) FROM fact_events WHERE timestamp >= ? "
        "AND timestamp < ? GROUP BY source", (split, split, start, end)).fetchall()


def latest_event_rowids_of_source(conn: Connection, source: str, start: float, end: float, limit: int) -> list[int]:
    """Rowids of a source's newest events in [start, end), newest first."""
    return [r[0] for r in conn.execute(
        "SELECT id FROM fact_events WHERE source = ? AND timestamp >= ? AND timestamp < ? ORDER BY timestamp "
        "DESC LIMIT ?", (source, start, end, limit))]


def sessions_ended_between(conn: Connection, now: float, start: float, end: float,
                           min_events: int) -> list[tuple[str, float]]:
    """(session_id, last event time) of the sessions whose last event by ``now`` happened in [start, end] and
    that hold at least ``min_events`` events."""
    return conn.execute(
        "SELECT session_id, max(timestamp) FROM fact_events WHERE session_id IS NOT NULL "
        "AND timestamp <= ? GROUP BY session_id HAVING max(timestamp) <= ? AND max(timestamp) >= ? "
        "AND count(*) >= ?", (now, end, start, min_events)).fetchall()


def last_session_steps(conn: Connection, session_id: str, now: float, limit: int) -> list[tuple[int, float, str, str]]:
    """(id, timestamp, author_type, content) of a session's newest conversational or tool events by ``now``,
    newest first."""
    return conn.execute(
        "SELECT id, timestamp, author_type, content FROM fact_events WHERE session_id = ? AND timestamp <= ? "
        "AND evidence_class IN ('user_self_report', 'user_question', 'user_directive', 'assistant_response', "
        "'tool_result') ORDER BY timestamp DESC, id DESC LIMIT ?", (session_id, now, limit)).fetchall()


def events_of_classes_between(conn: Connection, evidence_classes: Sequence[str], start: float,
                              end: float) -> list[tuple[Any, ...]]:
    """(id, timestamp, source, author_type, evidence_class, content, metadata_json) of the events of these
    evidence classes in [start, end), in time order."""
    marks = placeholders(len(evidence_classes))
    return conn.execute(
        "SELECT id, timestamp, source, author_type, evidence_class, content, metadata_json FROM fact_events "
        f"WHERE timestamp >= ? AND timestamp < ? AND evidence_class IN ({marks}) ORDER BY timestamp, id",
        (start, end, *evidence_classes)).fetchall()


# --------------------------------------------------------------------- what the recall paths read (retrieval/paths.py)

def visible_filter(scopes: Sequence[str], now: float, alias: str = "e", cold: bool = False) -> EventFilter:
    """Events of these retrieval scopes recorded by ``now`` (``alias``: the name of ``fact_events`` in the query);
    hot ones only unless ``cold`` (store/tiers.py: default recall does not search the cold tier)."""
    marks = placeholders(len(scopes))
    return EventFilter(f"{alias}.l1_retrieval_scope IN ({marks}) AND {alias}.recorded_at <= ?"
                       + ("" if cold else f" AND {alias}.tier <> 1"), [*scopes, now])


def events_recorded_by(conn: Connection, now: float) -> int:
    """How many events were recorded by ``now``: the live total (l1_event_counts) less those recorded later, so
    the index range read is the events after ``now`` (none at live use), not every event before it."""
    return conn.execute("SELECT (SELECT coalesce(sum(events), 0) FROM l1_event_counts) - "
                        "(SELECT count(*) FROM fact_events WHERE recorded_at > ?)", (now,)).fetchone()[0]


def session_and_time(conn: Connection, rowid: int) -> tuple[str | None, float] | None:
    """(session_id, timestamp) of an event, or None when it is gone."""
    return conn.execute("SELECT session_id, timestamp FROM fact_events WHERE id = ?", (rowid,)).fetchone()


def session_turns_before(conn: Connection, session_id: str, timestamp: float, visible: EventFilter,
                         limit: int) -> list[int]:
    """Rowids of the visible events of a session that happened before ``timestamp``, latest first."""
    return [r[0] for r in conn.execute(
        f"SELECT e.id FROM fact_events e WHERE e.session_id = ? AND e.timestamp < ? AND {visible.clause} "
        "ORDER BY e.timestamp DESC LIMIT ?", [session_id, timestamp, *visible.args, limit]).fetchall()]


def session_turns_after(conn: Connection, session_id: str, timestamp: float, visible: EventFilter,
                        limit: int) -> list[int]:
    """Rowids of the visible events of a session that happened after ``timestamp``, soonest first."""
    return [r[0] for r in conn.execute(
        f"SELECT e.id FROM fact_events e WHERE e.session_id = ? AND e.timestamp > ? AND {visible.clause} "
        "ORDER BY e.timestamp ASC LIMIT ?", [session_id, timestamp, *visible.args, limit]).fetchall()]


def trace_rowid(conn: Connection, trace_id: str) -> int | None:
    """The runtime_traces row of a stored trace (L4 cites it), or None."""
    row = conn.execute("SELECT id FROM runtime_traces WHERE trace_id = ?", (trace_id,)).fetchone()
    return row[0] if row else None


# --------------------------------------------------------------------- what remember() and the chat retries read

def stored_message_id(conn: Connection, message_id: str) -> str | None:
    """The event id of the stored event ``message_id`` names: its event id, or a chat message's
    ``source_item_id``; None when none is stored."""
    row = conn.execute("SELECT event_id FROM fact_events WHERE event_id = ? UNION ALL SELECT event_id FROM "
                       "fact_events WHERE source = 'chat' AND source_item_id = ? LIMIT 1",
                       (message_id, message_id)).fetchone()
    return row[0] if row else None


def message_with_item_id(conn: Connection, source: str, source_item_id: str) -> tuple[str | None, str] | None:
    """(session_id, content) of the stored event of ``source`` with this item id, if any."""
    return conn.execute("SELECT session_id, content FROM fact_events WHERE source = ? AND source_item_id = ? "
                        "LIMIT 1", (source, source_item_id)).fetchone()


def last_chat_message(conn: Connection, session_id: str) -> tuple[str, float, str, str, str, str] | None:
    """(event_id, timestamp, content, metadata_json, ingest_target, evidence_class) of a session's latest chat
    message, if any."""
    return conn.execute(
        "SELECT event_id, timestamp, content, metadata_json, ingest_target, evidence_class FROM fact_events "
        "WHERE session_id = ? AND event_type = 'CHAT_MESSAGE' ORDER BY timestamp DESC, id DESC LIMIT 1",
        (session_id,)).fetchone()


def delete_event(conn: Connection, rowid: int) -> None:
    """Delete one event row (its chunks and vectors go too, by the schema's triggers)."""
    conn.execute("DELETE FROM fact_events WHERE id = ?", (rowid,))


# --- the activity timeline of the memory viewer (core/l2/beliefs.py) ------------------------------------------

def events_per_source_and_day(conn: Connection, since: float, until: float) -> list[tuple[str, str, int]]:
    """(source, local day "YYYY-MM-DD", stored events) between two times, by day."""
    return conn.execute(
        "SELECT source, date(timestamp, 'unixepoch', 'localtime') AS day, count(*) FROM fact_events "
        "WHERE timestamp >= ? AND timestamp < ? GROUP BY source, day ORDER BY day", (since, until)).fetchall()


def event_exists(conn: Connection, rowid: int) -> bool:
    """Whether the event of this rowid is still stored."""
    return conn.execute("SELECT 1 FROM fact_events WHERE id = ?", (rowid,)).fetchone() is not None


def ingested_at(conn: Connection, rowid: int) -> float | None:
    """When the event of this rowid was stored, or None when it is gone."""
    row = conn.execute("SELECT ingested_at FROM fact_events WHERE id = ?", (rowid,)).fetchone()
    return None if row is None else row[0]
