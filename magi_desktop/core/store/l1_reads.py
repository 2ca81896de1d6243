"""L1 reads: what the layers and the tests read of ``fact_events``, ``runtime_traces`` and ``chat_sessions`` —
stored rows as records, the recall paths' filters and lookups, what L3, the chat retries and the memory viewer
ask. Plain functions over a connection, none of them writes; the write path is :mod:`.l1` (which also exports
these, so ``l1.visible_filter`` and the like keep working).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from .connection import Connection, placeholders

__all__ = [  # what store/l1.py exports with its own names
    "assistant_turns", "candidate_rows", "chat_sessions", "ChatSession", "event_by_id_or_chat_item", "event_exists",
    "event_for_finding", "event_row", "event_rowids_between", "event_rows", "EventFilter",
    "events_of_classes_between", "events_per_source", "events_per_source_and_day", "events_per_source_around",
    "events_recorded_by", "first_event_time", "ingested_at", "last_chat_message", "last_session_steps",
    "latest_event_rowids_of_classes", "latest_event_rowids_of_source", "listed_events_of_source",
    "message_with_item_id", "newest_rowid", "session_and_time", "session_turns_after", "session_turns_before",
    "sessions_ended_between", "stored_message_id", "stored_secret", "times_after_rowid", "trace_rowid",
    "trace_rows", "visible_filter", "window_filter"
]

# The stored columns of an event and of a runtime trace, in the order the write path inserts them (store/l1.py).
EVENT_COLUMNS = (
    "event_id", "timestamp", "event_type", "source", "source_item_id", "idempotency_key", "session_id",
    "user_id", "content", "memory_domain", "ingest_target", "cognition_eligible", "retention_class",
    "author_type", "content_type", "evidence_class", "l1_retrieval_scope", "metadata_json", "ingested_at",
    "recorded_at", "natural_key",
)
TRACE_COLUMNS = (
    "trace_id", "timestamp", "event_type", "source", "source_item_id", "idempotency_key", "session_id",
    "user_id", "content", "author_type", "evidence_class", "tool", "category", "ok", "duration_ms", "error",
    "metadata_json", "ingested_at",
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
        f"SELECT id, {', '.join(EVENT_COLUMNS)} FROM fact_events{clause} ORDER BY id", [v for _, v in where])]


def trace_rows(conn: Connection, *, source_item_id: str | None = None) -> list[dict[str, Any]]:
    """Every stored runtime trace (only those of one source item, when given) as a dict of its columns, its
    metadata parsed, by rowid."""
    clause, args = (" WHERE source_item_id = ?", [source_item_id]) if source_item_id is not None else ("", [])
    records = []
    for row in conn.execute(f"SELECT {', '.join(TRACE_COLUMNS)} FROM runtime_traces{clause} ORDER BY rowid", args):
        record = dict(zip(TRACE_COLUMNS, row, strict=True))
        record["metadata"] = json.loads(record.pop("metadata_json"))
        records.append(record)
    return records


# --------------------------------------------------------------------- reads


def event_row(conn: Connection, event_id: str) -> dict[str, Any] | None:
    cursor = conn.execute(f"SELECT id, {', '.join(EVENT_COLUMNS)} FROM fact_events WHERE event_id = ?",
                          (event_id,))
    row = cursor.fetchone()
    return None if row is None else _event_record(row)


def _event_record(row: Sequence[Any]) -> dict[str, Any]:
    """A fact_events row (its rowid first, then ``EVENT_COLUMNS``) as a dict, its metadata parsed."""
    record = dict(zip(["id", *EVENT_COLUMNS], row, strict=True))
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


def events_per_source(conn: Connection, where: EventFilter, cap: int | None = None) -> dict[str, int]:
    """How many events passing ``where`` each source holds; with ``cap``, counted up to ``cap + 1`` (a source
    holding more says ``cap + 1``)."""
    # One range of fact_events_source_time (migration 0029) per source the memory holds (l1_event_counts):
    # the window's index entries alone, never the whole index — and with a cap, no more than that many of them
    # (a month of a heavy user's page visits, each checked against the activity blocks: ~20 ms).
    limit = "" if cap is None else f" LIMIT {int(cap) + 1}"
    return {source: n for source, n in conn.execute(
        f"SELECT s.source, (SELECT count(*) FROM (SELECT 1 FROM fact_events INDEXED BY fact_events_source_time "
        f"WHERE source = s.source AND {where.clause}{limit})) FROM (SELECT DISTINCT source FROM l1_event_counts "
        "WHERE events > 0) s", where.args).fetchall() if n}


def listed_events_of_source(conn: Connection, where: EventFilter, source: str, ahead: bool,
                            limit: int) -> list[tuple[Any, ...]]:
    """A source's events passing ``where`` (listing columns): the user's first, then soonest if ``ahead``
    else newest."""
    # Two walks of fact_events_source_time (migration 0029) from the window's newest (or soonest) entry: the user's
    # events, then the others, each until ``limit``. The author is in the index, so where the user wrote fewer than
    # ``limit`` (page visits, plays) the first walk reads the window's index entries of the source but checks
    # nothing else on them (a month of 20k visits: ~2 ms). One ORDER BY over both ("the user's first") sorted every
    # entry of the window: 63 ms for a month of seven sources at 2,700 events a day, 7 ms now.
    order = f"timestamp {'ASC' if ahead else 'DESC'}"
    rows: list[tuple[Any, ...]] = []
    for author in ("author_type = 'user'", "author_type IS NOT 'user'"):
        if len(rows) < limit:
            rows += conn.execute(
                f"SELECT {_LISTING_COLUMNS} FROM fact_events WHERE id IN (SELECT id FROM fact_events "
                f"INDEXED BY fact_events_source_time WHERE {where.clause} AND source = ? AND {author} ORDER BY {order} "
                f"LIMIT ?) ORDER BY {order}", [*where.args, source, limit - len(rows)]).fetchall()
    return rows


# What a page of the memory's events shows (``Memory.list_events``): the listing columns and the tier.
_PAGE_COLUMNS = "id, " + _LISTING_COLUMNS + ", tier"


def events_page(conn: Connection, where: EventFilter, limit: int,
                before: tuple[float, int] | None = None) -> list[tuple[Any, ...]]:
    """Up to ``limit`` events passing ``where``, newest first (rowid, then the listing columns, then the tier);
    with ``before`` (timestamp, rowid) only those older than it: the next page."""
    clause, args = where.clause, list(where.args)
    if before is not None:
        clause += " AND (timestamp < ? OR (timestamp = ? AND id < ?))"
        args += [before[0], before[0], before[1]]
    return conn.execute(f"SELECT {_PAGE_COLUMNS} FROM fact_events WHERE {clause} ORDER BY timestamp DESC, id DESC "
                        "LIMIT ?", [*args, limit]).fetchall()


def event_position(conn: Connection, event_id: str) -> tuple[float, int] | None:
    """(timestamp, rowid) of a stored event, or None."""
    return conn.execute("SELECT timestamp, id FROM fact_events WHERE event_id = ?", (event_id,)).fetchone()


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


def chat_message_position(conn: Connection, session_id: str, event_id: str) -> tuple[float, int] | None:
    """(timestamp, rowid) of a chat message of the session, or None."""
    return conn.execute("SELECT timestamp, id FROM fact_events WHERE event_id = ? AND session_id = ? "
                        "AND event_type = 'CHAT_MESSAGE'", (event_id, session_id)).fetchone()


def latest_chat_messages(conn: Connection, session_id: str, limit: int, before: tuple[float, int] | None = None,
                         stored_since: float | None = None) -> list[tuple[Any, ...]]:
    """A session's latest ``limit`` chat messages, newest first, as (rowid, event_id, timestamp, content,
    metadata_json, source_item_id); with ``before`` (timestamp, rowid) only those older than it (a page); with
    ``stored_since`` only those the memory received since then (``ingested_at``)."""
    where, args = "", list[Any]([session_id])
    if before is not None:
        where = " AND (timestamp < ? OR (timestamp = ? AND id < ?))"
        args += [before[0], *before]
    if stored_since is not None:
        where += " AND ingested_at >= ?"
        args.append(stored_since)
    return conn.execute(
        "SELECT id, event_id, timestamp, content, metadata_json, source_item_id FROM fact_events "
        f"WHERE session_id = ? AND event_type = 'CHAT_MESSAGE'{where} ORDER BY timestamp DESC, id DESC LIMIT ?",
        [*args, limit]).fetchall()


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
