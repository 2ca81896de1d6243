"""Supersede an L1 event by its natural key (issue 17): one live version per (source, natural key).

A payload may carry a ``natural_key`` (a calendar UID and occurrence, later the live app-usage hour or an
activity block). When a new version of a key is stored, the stored one is *retired*: its L2 evidence links
are handed to the new version, the L3 summaries that quote it are drawn again on the next L3 run (they
hold its old words), then its row is deleted — with its
full-text terms, vectors, entity links and queued jobs, by the same triggers forget relies on — and a
content-free record in ``l1_superseded`` says which version replaced it. A ``retire`` payload (a cancelled
meeting) retires the stored version without a successor.

Why delete rather than keep a hidden row: a row absent from ``fact_events`` cannot leak through any recall
path, count, export or future query that forgets a filter, and forgetting the live version then erases
every version (the old row's bytes went with ``secure_delete``; its index terms go with forget's merge).

Plain functions over a connection inside the caller's write transaction, like :mod:`.l1`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

from ..contracts import MemoryEvent
from . import summaries
from .connection import Connection, placeholders

_LOOKUP_CHUNK = 400
RETIRED = "retired"      # the ``target`` an IngestResult reports for a retire payload

# Rows that cite an event as evidence and must follow it to its new version (the rest is derived from
# the event's own text and is made again for the new version: entity links, mentions, jobs). A summary
# quotes the old words ("Dentist at 9:00"), so it is drawn again instead (summaries.redraw_citing).
_EVIDENCE_TABLES = ("l2_evidence",)


# readers the tests and layers share

def superseded(conn: Connection) -> dict[str, str | None]:
    """Every retired version's event id → the event id of the version that replaced it (None: retired without
    a successor)."""
    return dict(conn.execute("SELECT event_id, superseded_by FROM l1_superseded").fetchall())


class Predecessor(NamedTuple):
    rowid: int
    event_id: str
    recorded_at: float


def live_versions(conn: Connection, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Predecessor]:
    """The stored live event of each (source, natural key)."""
    by_source: dict[str, list[str]] = {}
    for source, key in set(keys):
        by_source.setdefault(source, []).append(key)
    found: dict[tuple[str, str], Predecessor] = {}
    for source, natural_keys in by_source.items():
        for first in range(0, len(natural_keys), _LOOKUP_CHUNK):
            chunk = natural_keys[first:first + _LOOKUP_CHUNK]
            rows = conn.execute(
                "SELECT natural_key, id, event_id, recorded_at FROM fact_events WHERE source = ? "
                f"AND natural_key IN ({placeholders(len(chunk))})", (source, *chunk))
            for key, rowid, event_id, recorded in rows:
                found[(source, key)] = Predecessor(rowid, event_id, recorded)
    return found


def adopt_keys(conn: Connection, duplicates: Sequence[tuple[str, str, str]]) -> None:
    """A re-collected item stored before it had a natural key (before migration 0019) takes the key it is
    sent with now — unless another event already holds it — so its next version supersedes it."""
    for source, key, event_id in duplicates:
        conn.execute("UPDATE fact_events SET natural_key = ? WHERE event_id = ? AND natural_key IS NULL AND NOT EXISTS "
                     "(SELECT 1 FROM fact_events WHERE source = ? AND natural_key = ?)", (key, event_id, source, key))


def inherited_record_time(event: MemoryEvent, predecessor: Predecessor) -> float:
    """A plan keeps the time its first version was collected: it was known since then, only its details
    changed. Any other event stays visible from its own occurred_at."""
    if "schedule" in event.metadata and predecessor.recorded_at is not None:
        return min(event.visible_from, predecessor.recorded_at)
    return event.visible_from


def hand_over(conn: Connection, old: Predecessor, new_rowid: int, new_event_id: str, now: float | None = None) -> None:
    """Retire ``old`` in favour of the stored row ``new_rowid``: its evidence links move, its row goes."""
    for table in _EVIDENCE_TABLES:
        # OR IGNORE: a link the new version already has stays once; the old copy goes with the old row.
        conn.execute(f"UPDATE OR IGNORE {table} SET event_rowid = ? WHERE event_rowid = ?", (new_rowid, old.rowid))
    summaries.redraw_citing(conn, [new_rowid])     # a meeting moved into a summarised day: that day again
    _retire(conn, old, new_event_id, now)


def retire(conn: Connection, old: Predecessor, now: float | None = None) -> None:
    """Retire ``old`` without a successor (a cancelled meeting): what only it supported is forgotten."""
    _retire(conn, old, None, now)


def _retire(conn: Connection, old: Predecessor, successor: str | None, now: float | None) -> None:
    at = time.time() if now is None else now
    summaries.redraw_citing(conn, [old.rowid])
    # Versions it had replaced now point at its successor (or are retired with it).
    conn.execute("UPDATE l1_superseded SET superseded_by = ? WHERE superseded_by = ?", (successor, old.event_id))
    conn.execute("INSERT OR REPLACE INTO l1_superseded (event_id, source, superseded_by, superseded_at) "
                 "SELECT event_id, source, ?, ? FROM fact_events WHERE id = ?", (successor, at, old.rowid))
    conn.execute("DELETE FROM fact_events WHERE id = ?", (old.rowid,))

