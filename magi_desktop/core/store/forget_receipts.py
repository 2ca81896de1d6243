"""The tables of forget as a job (issue 16, :mod:`..forget_job`): the receipts (``forget_receipts``), the rows a
running job still has to delete (``forget_targets``), the key of the receipts' hashes (``forget_secret``) and
the log of exports made (``export_log``).

Writes run inside the caller's write transaction; reads on any connection.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .connection import Connection, placeholders

DELETING, SCRUBBING, DONE = "deleting", "scrubbing", "done"      # a receipt's states, in order
RECEIPT_COLUMNS = ("receipt_id", "created_at", "criteria_json", "event_ids_json", "counts_json", "state",
                   "deleted_at", "scrubbed_at", "data_since")
_ROWID_CHUNK = 500


# ------------------------------------------------------------------ the key of the hashes


def stored_secret(conn: Connection) -> bytes | None:
    row = conn.execute("SELECT secret FROM forget_secret WHERE id = 1").fetchone()
    return bytes(row[0]) if row else None


def add_secret(conn: Connection, secret: bytes) -> None:
    """Store ``secret`` unless a key is stored already."""
    conn.execute("INSERT OR IGNORE INTO forget_secret (id, secret) VALUES (1, ?)", (secret,))


# ------------------------------------------------------------------ what a request names


def _column(conn: Connection, sql: str, rowids: Sequence[int]) -> list[Any]:
    out = []
    for first in range(0, len(rowids), _ROWID_CHUNK):
        part = list(rowids[first:first + _ROWID_CHUNK])
        out += [r[0] for r in conn.execute(sql.format(placeholders(len(part))), part)]
    return out


def event_ids_of(conn: Connection, rowids: Sequence[int]) -> list[str]:
    return _column(conn, "SELECT event_id FROM fact_events WHERE id IN ({})", rowids)


def _since(conn: Connection, sql: str, rowids: Sequence[int]) -> float | None:
    times = [t for t in _column(conn, sql, rowids) if t is not None]
    return min(times) if times else None


def first_recorded(conn: Connection, events: Sequence[int], traces: Sequence[int],
                   entities: Sequence[int]) -> float | None:
    """When the first of these rows was recorded (None: no row, or no time): exports made before it cannot
    hold them."""
    starts = [_since(conn, sql, rowids) for sql, rowids in (
        ("SELECT min(ingested_at) FROM fact_events WHERE id IN ({})", events),
        ("SELECT min(ingested_at) FROM runtime_traces WHERE id IN ({})", traces),
        ("SELECT min(created_at) FROM entity_catalog WHERE entity_id IN ({})", entities))]
    since = [s for s in starts if s is not None]
    return min(since) if since else None


# ------------------------------------------------------------------ the job


def add_receipt(conn: Connection, created_at: float, criteria_json: str, event_ids_json: str, state: str,
                data_since: float | None, claimed_by: str, claimed_until: float) -> int:
    """A new receipt with keyed criteria and no counts yet, claimed by ``claimed_by``; returns its id."""
    return conn.execute(
        "INSERT INTO forget_receipts (created_at, criteria_json, event_ids_json, counts_json, state, data_since, "
        "criteria_keyed, claimed_by, claimed_until) VALUES (?, ?, ?, '{}', ?, ?, 1, ?, ?)",
        (created_at, criteria_json, event_ids_json, state, data_since, claimed_by, claimed_until)).lastrowid


def mark_finished_at_once(conn: Connection, receipt_id: int, now: float) -> None:
    """A request that named nothing: deleted and scrubbed when made."""
    conn.execute("UPDATE forget_receipts SET deleted_at = ?, scrubbed_at = ? WHERE receipt_id = ?",
                 (now, now, receipt_id))


def add_targets(conn: Connection, receipt_id: int, kind: str, rowids: Sequence[int]) -> None:
    conn.executemany("INSERT OR IGNORE INTO forget_targets (receipt_id, kind, target_rowid) VALUES (?, ?, ?)",
                     [(receipt_id, kind, rowid) for rowid in rowids])


def next_targets(conn: Connection, receipt_id: int, kind: str, limit: int) -> list[int]:
    """The job's first ``limit`` targets of ``kind`` still to delete, by rowid."""
    return [r[0] for r in conn.execute(
        "SELECT target_rowid FROM forget_targets WHERE receipt_id = ? AND kind = ? ORDER BY target_rowid "
        "LIMIT ?", (receipt_id, kind, limit))]


def drop_targets(conn: Connection, receipt_id: int, kind: str, rowids: Sequence[int]) -> None:
    conn.executemany("DELETE FROM forget_targets WHERE receipt_id = ? AND kind = ? AND target_rowid = ?",
                     [(receipt_id, kind, rowid) for rowid in rowids])


def counts_json(conn: Connection, receipt_id: int) -> str:
    """What the job removed so far (JSON: rows per table)."""
    return conn.execute("SELECT counts_json FROM forget_receipts WHERE receipt_id = ?", (receipt_id,)).fetchone()[0]


def save_counts(conn: Connection, receipt_id: int, counts_json: str, claimed_until: float) -> None:
    """Record what the job removed so far, and extend its runner's lease."""
    conn.execute("UPDATE forget_receipts SET counts_json = ?, claimed_until = ? WHERE receipt_id = ?",
                 (counts_json, claimed_until, receipt_id))


def mark_deleted(conn: Connection, receipt_id: int, now: float) -> None:
    """A deleting job has no row left to delete: it waits for the scrub."""
    conn.execute("UPDATE forget_receipts SET state = ?, deleted_at = ? WHERE receipt_id = ? AND state = ?",
                 (SCRUBBING, now, receipt_id, DELETING))


def unfinished(conn: Connection) -> list[tuple[int, str]]:
    """(receipt id, state) of every job not done, oldest first."""
    return [tuple(r) for r in conn.execute(
        "SELECT receipt_id, state FROM forget_receipts WHERE state != ? ORDER BY receipt_id", (DONE,))]


def in_state(conn: Connection, state: str) -> list[tuple[int, str | None, float | None]]:
    """(receipt id, claimed_by, claimed_until) of every job in ``state``."""
    return [tuple(r) for r in conn.execute(
        "SELECT receipt_id, claimed_by, claimed_until FROM forget_receipts WHERE state = ? ORDER BY receipt_id",
        (state,))]


def release(conn: Connection, receipt_ids: Sequence[int]) -> None:
    """The runner's lease on these jobs ends."""
    conn.executemany("UPDATE forget_receipts SET claimed_until = NULL WHERE receipt_id = ?",
                     [(r,) for r in receipt_ids])


def claim(conn: Connection, receipt_id: int, previous: str | None, runner: str, until: float) -> bool:
    """``runner`` takes a deleting job over from ``previous``; False if someone else took it meanwhile."""
    return conn.execute("UPDATE forget_receipts SET claimed_by = ?, claimed_until = ? WHERE receipt_id = ? AND "
                        "state = ? AND coalesce(claimed_by, '') = ?",
                        (runner, until, receipt_id, DELETING, previous or "")).rowcount > 0


def last_deleted_at(conn: Connection) -> float | None:
    """When the newest deletion finished."""
    return conn.execute("SELECT max(deleted_at) FROM forget_receipts WHERE state != ?", (DELETING,)).fetchone()[0]


def mark_scrubbed(conn: Connection, receipt_ids: Sequence[int], now: float) -> None:
    """These jobs waiting for the scrub are done; a finished job has no runner: its claim goes with it."""
    conn.executemany("UPDATE forget_receipts SET state = ?, scrubbed_at = ?, claimed_by = NULL, claimed_until = NULL "
                     "WHERE receipt_id = ? AND state = ?",
                     [(DONE, now, receipt_id, SCRUBBING) for receipt_id in receipt_ids])


def any_unkeyed(conn: Connection) -> bool:
    """Whether a receipt written before keyed criteria is left."""
    return conn.execute("SELECT 1 FROM forget_receipts WHERE criteria_keyed = 0 LIMIT 1").fetchone() is not None


def unkeyed(conn: Connection) -> list[tuple[int, str]]:
    """(receipt id, criteria JSON) of every receipt written before keyed criteria."""
    return conn.execute("SELECT receipt_id, criteria_json FROM forget_receipts WHERE criteria_keyed = 0").fetchall()


def rekey(conn: Connection, receipt_id: int, criteria_json: str, now: float) -> None:
    """The receipt gets keyed criteria and is scrubbed again, as if deleted ``now`` (unless still deleting)."""
    conn.execute("UPDATE forget_receipts SET criteria_json = ?, criteria_keyed = 1, deleted_at = ?, state = ? "
                 "WHERE receipt_id = ? AND state != ?", (criteria_json, now, SCRUBBING, receipt_id, DELETING))


def receipt_rows(conn: Connection, receipt_id: int | None = None) -> Iterator[dict[str, Any]]:
    """The receipts (one, or all), newest first, by :data:`RECEIPT_COLUMNS` — read as the caller goes on (it
    may stop after a few)."""
    where, args = "", []
    if receipt_id is not None:
        where, args = "WHERE receipt_id = ?", [receipt_id]
    rows = conn.execute(f"SELECT {', '.join(RECEIPT_COLUMNS)} FROM forget_receipts {where} ORDER BY receipt_id DESC",
                        args)
    return (dict(zip(RECEIPT_COLUMNS, row, strict=True)) for row in rows)


# ------------------------------------------------------------------ the export log


def record_export(conn: Connection, path: str, fmt: str, at: float) -> None:
    conn.execute("INSERT INTO export_log (path, format, exported_at) VALUES (?, ?, ?)", (path, fmt, at))


def exports_between(conn: Connection, since: float, until: float) -> list[tuple[str, str, float]]:
    """(path, format, time) of the exports made from ``since`` to before ``until``, oldest first."""
    return conn.execute("SELECT path, format, exported_at FROM export_log WHERE exported_at < ? AND exported_at >= ? "
                        "ORDER BY exported_at", (until, since)).fetchall()
