"""L1 rows: fact events, runtime traces, per-source counters — how they are written. What is read of them is in
:mod:`.l1_reads`, exported here too.

Plain functions over a connection; the caller owns the transaction. Inserts
are bulk (executemany) after one dedupe lookup per batch; the FTS row is
written beside each event here, while the embedding job and the chat-session
index follow inserts, and FTS/vectors/sessions follow deletes, through
triggers (see migrations/0001), so they cannot drift.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ..contracts import MemoryEvent, tool_run_of
from ..text import fts_document, index_text
from . import supersede
from .connection import Connection, placeholders
from .json_text import compact_json
from .l1_reads import *  # noqa: F403 (the reads moved out: l1.event_rows and the like keep working)
from .l1_reads import EVENT_COLUMNS, TRACE_COLUMNS

_INSERT_EVENT = (
    f"INSERT INTO fact_events (id, {', '.join(EVENT_COLUMNS)}) "
    f"VALUES (?, {placeholders(len(EVENT_COLUMNS))})"
)
_INSERT_FTS = "INSERT INTO fact_events_fts (rowid, content, context) VALUES (?, ?, ?)"
_INSERT_TRACE = (
    f"INSERT INTO runtime_traces ({', '.join(TRACE_COLUMNS)}) VALUES ({placeholders(len(TRACE_COLUMNS))})"
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


def meta_secret(conn: Connection, key: str) -> bytes:
    """A random per-database secret stored in memory_meta, created on first use."""
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (key,)).fetchone()
    if row is None:
        conn.execute("INSERT OR IGNORE INTO memory_meta (key, value) VALUES (?, ?)", (key, secrets.token_hex(32)))
        row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (key,)).fetchone()
    return bytes.fromhex(row[0])


def delete_event(conn: Connection, rowid: int) -> None:
    """Delete one event row (its chunks and vectors go too, by the schema's triggers)."""
    conn.execute("DELETE FROM fact_events WHERE id = ?", (rowid,))

