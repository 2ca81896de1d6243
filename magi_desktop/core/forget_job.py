"""Forget as a resumable job (issue 16): request, chunks, scrub — and receipts that keep no names.

1. **Request**, in its own committed transaction: the receipt (state ``deleting``) with the criteria as
   keyed hashes, the event ids, and every row to remove in ``forget_targets`` (rowids, found now). A
   crash after it leaves a job that the next open, ``run_due`` or background batch finishes.
2. **Chunks**: each short transaction removes some targets with everything derived from them
   (:mod:`.forget`) and drops them from ``forget_targets``, so the memory is consistent after each, and
   other writers get the lock in between. The last one moves the receipt to ``scrubbing``.
3. **Scrub** (:mod:`.scrub`): until no file of the memory holds what went; then ``done``.

A receipt's criteria never hold a name: the entity and the item ids are HMAC-SHA256 under the database's
own secret (``forget_secret``, made on first use, never exported), so "was this forgotten?" can be
answered when asked with the name, and the name cannot be read back. Event ids (the memory's own ULIDs),
the source (a collector's name, kept in the clear in its counters anyway), times and counts stay as
they are.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal, overload

from . import forget as forgetting
from .store.connection import Connection
from .store.entities import name_key

DELETING, SCRUBBING, DONE = "deleting", "scrubbing", "done"
LEASE_SECONDS = 60.0        # a deleting job whose runner has not committed a chunk for this long was left by a crash
KEYED_CRITERIA = ("entity", "source_item_ids")
_KINDS = ("event", "trace", "entity")          # the order a job removes them in


def criteria_of(event_ids=None, source_item_ids=None, entity=None, source=None, start=None, end=None) -> dict:
    """The criteria as given, without the empty ones."""
    given = {"event_ids": list(event_ids or []), "source_item_ids": list(source_item_ids or []), "entity": entity,
             "source": source, "start": start, "end": end}
    return {key: value for key, value in given.items() if value not in (None, [], "")}


# ------------------------------------------------------------------------ keyed hashes


@overload
def receipt_secret(conn: Connection, *, create: Literal[True] = True) -> bytes: ...
@overload
def receipt_secret(conn: Connection, *, create: bool) -> bytes | None: ...
def receipt_secret(conn: Connection, *, create: bool = True) -> bytes | None:
    """The database's key for receipt hashes (made on first use when ``create``, inside the caller's
    transaction)."""
    row = conn.execute("SELECT secret FROM forget_secret WHERE id = 1").fetchone()
    if row is None and create:
        conn.execute("INSERT OR IGNORE INTO forget_secret (id, secret) VALUES (1, ?)", (os.urandom(32),))
        row = conn.execute("SELECT secret FROM forget_secret WHERE id = 1").fetchone()
    return bytes(row[0]) if row else None


def keyed(secret: bytes, kind: str, value: str) -> str:
    """``hmac-sha256:<hex>`` of one criterion (an entity by its case-folded name)."""
    text = name_key(value) if kind == "entity" else value
    digest = hmac.new(secret, f"{kind}\x00{text}".encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return f"hmac-sha256:{digest}"


def keyed_criteria(secret: bytes, criteria: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(criteria)
    if criteria.get("entity"):
        out["entity"] = keyed(secret, "entity", criteria["entity"])
    if criteria.get("source_item_ids"):
        out["source_item_ids"] = [keyed(secret, "item", item) for item in criteria["source_item_ids"]]
    return out


# ------------------------------------------------------------------------ the job


def request(conn: Connection, criteria: Mapping[str, Any], now: float | None = None) -> int:
    """Inside the caller's write transaction: store the request and its targets; returns the receipt id.
    ``ValueError`` (nothing written) when the criteria say nothing."""
    now = time.time() if now is None else now
    targets = forgetting.find_targets(conn, **criteria)
    secret = receipt_secret(conn)
    event_ids = _column(conn, "SELECT event_id FROM fact_events WHERE id IN ({})", targets.events)
    starts = [_since(conn, sql, rowids) for sql, rowids in (
        ("SELECT min(ingested_at) FROM fact_events WHERE id IN ({})", targets.events),
        ("SELECT min(ingested_at) FROM runtime_traces WHERE id IN ({})", targets.traces),
        ("SELECT min(created_at) FROM entity_catalog WHERE entity_id IN ({})", targets.entities))]
    since = [s for s in starts if s is not None]
    receipt_id = conn.execute(
        "INSERT INTO forget_receipts (created_at, criteria_json, event_ids_json, counts_json, state, data_since, "
        "criteria_keyed, claimed_by, claimed_until) VALUES (?, ?, ?, '{}', ?, ?, 1, ?, ?)",
        (now, json.dumps(keyed_criteria(secret, criteria)), json.dumps(event_ids),
         DELETING if targets else DONE, min(since) if since else None, runner(), now + LEASE_SECONDS)).lastrowid
    if not targets:
        conn.execute("UPDATE forget_receipts SET deleted_at = ?, scrubbed_at = ? WHERE receipt_id = ?",
                     (now, now, receipt_id))
    for kind, rowids in zip(_KINDS, (targets.events, targets.traces, targets.entities), strict=True):
        conn.executemany("INSERT OR IGNORE INTO forget_targets (receipt_id, kind, target_rowid) VALUES (?, ?, ?)",
                         [(receipt_id, kind, rowid) for rowid in rowids])
    return receipt_id


def _column(conn: Connection, sql: str, rowids: Sequence[int]) -> list:
    out = []
    for first in range(0, len(rowids), 500):
        part = list(rowids[first:first + 500])
        out += [r[0] for r in conn.execute(sql.format(", ".join("?" * len(part))), part)]
    return out


def _since(conn: Connection, sql: str, rowids: Sequence[int]) -> float | None:
    """When the first of these rows was recorded: exports made before it cannot hold them."""
    times = _column(conn, sql, rowids)
    times = [t for t in times if t is not None]
    return min(times) if times else None


def delete_chunk(conn: Connection, receipt_id: int, size: int, now: float | None = None) -> forgetting.Removed | None:
    """Inside the caller's write transaction: remove up to ``size`` of the job's targets (events first,
    then traces, then entities) and add what went to the receipt. None when nothing was left: the
    receipt is then ``scrubbing``."""
    now = time.time() if now is None else now
    for kind in _KINDS:
        rowids = [r[0] for r in conn.execute(
            "SELECT target_rowid FROM forget_targets WHERE receipt_id = ? AND kind = ? ORDER BY target_rowid "
            "LIMIT ?", (receipt_id, kind, size if kind != "entity" else 50))]
        if not rowids:
            continue
        if kind == "event":
            removed = forgetting.forget_events(conn, rowids, now)
        elif kind == "trace":
            removed = forgetting.forget_traces(conn, rowids)
        else:
            removed = forgetting.forget_entities(conn, rowids, now)
        conn.executemany("DELETE FROM forget_targets WHERE receipt_id = ? AND kind = ? AND target_rowid = ?",
                         [(receipt_id, kind, rowid) for rowid in rowids])
        counts = json.loads(conn.execute("SELECT counts_json FROM forget_receipts WHERE receipt_id = ?",
                                         (receipt_id,)).fetchone()[0])
        for table, n in removed.counts.items():
            counts[table] = counts.get(table, 0) + n
        conn.execute("UPDATE forget_receipts SET counts_json = ?, claimed_until = ? WHERE receipt_id = ?",
                     (json.dumps(counts, sort_keys=True), time.time() + LEASE_SECONDS, receipt_id))
        return removed
    conn.execute("UPDATE forget_receipts SET state = ?, deleted_at = ? WHERE receipt_id = ? AND state = ?",
                 (SCRUBBING, now, receipt_id, DELETING))
    return None


def unfinished(conn: Connection) -> list[tuple[int, str]]:
    """(receipt id, state) of every job not done, oldest first (a read)."""
    return [tuple(r) for r in conn.execute(
        "SELECT receipt_id, state FROM forget_receipts WHERE state != ? ORDER BY receipt_id", (DONE,))]


def runner() -> str:
    """This process, as a job's claim names it: its pid and start time (a pid alone can be reused)."""
    return f"{os.getpid()}:{_started(os.getpid())}"


def _started(pid: int) -> float | None:
    import psutil

    try:
        return round(psutil.Process(pid).create_time(), 2)
    except (psutil.Error, OSError):
        return None


def runner_alive(claimed_by: str | None) -> bool:
    """Whether the process named by a claim still runs (another process; this one knows its own jobs)."""
    if not claimed_by:
        return False
    pid, _, started = claimed_by.partition(":")
    try:
        pid_number = int(pid)
    except ValueError:
        return False
    now_started = _started(pid_number)
    return now_started is not None and str(now_started) == started


def in_state(conn: Connection, state: str) -> list[tuple[int, str | None, float | None]]:
    """(receipt id, claimed_by, claimed_until) of every job in ``state`` (a read)."""
    return [tuple(r) for r in conn.execute(
        "SELECT receipt_id, claimed_by, claimed_until FROM forget_receipts WHERE state = ? ORDER BY receipt_id",
        (state,))]


def release(conn: Connection, receipt_ids: Sequence[int]) -> None:
    """Inside the caller's write transaction: the runner is through with these jobs (a scrub still pending
    is anyone's to retry)."""
    conn.executemany("UPDATE forget_receipts SET claimed_until = NULL WHERE receipt_id = ?",
                     [(r,) for r in receipt_ids])


def claim(conn: Connection, receipt_id: int, previous: str | None) -> bool:
    """Inside the caller's write transaction: take a job over from ``previous`` (its crashed runner); False
    if someone else took it meanwhile."""
    return conn.execute("UPDATE forget_receipts SET claimed_by = ?, claimed_until = ? WHERE receipt_id = ? AND "
                        "state = ? AND coalesce(claimed_by, '') = ?",
                        (runner(), time.time() + LEASE_SECONDS, receipt_id, DELETING, previous or "")).rowcount > 0


def last_deleted_at(conn: Connection) -> float | None:
    """When the newest deletion finished (backups older than this may hold what it removed)."""
    return conn.execute("SELECT max(deleted_at) FROM forget_receipts WHERE state != ?", (DELETING,)).fetchone()[0]


def mark_scrubbed(conn: Connection, receipt_ids: Sequence[int], now: float | None = None) -> None:
    now = time.time() if now is None else now
    # A finished job has no runner: its claim goes with it.
    conn.executemany("UPDATE forget_receipts SET state = ?, scrubbed_at = ?, claimed_by = NULL, claimed_until = NULL "
                     "WHERE receipt_id = ? AND state = ?",
                     [(DONE, now, receipt_id, SCRUBBING) for receipt_id in receipt_ids])


def rekey_legacy(conn: Connection, now: float | None = None) -> int:
    """Inside the caller's write transaction: receipts written before keyed criteria get them, and are
    scrubbed again — as if their names were deleted now, so the backups made before (the one made before
    the upgrade among them) that hold the names are replaced too. Returns how many."""
    rows = conn.execute("SELECT receipt_id, criteria_json FROM forget_receipts WHERE criteria_keyed = 0").fetchall()
    if not rows:
        return 0
    now = time.time() if now is None else now
    secret = receipt_secret(conn)
    for receipt_id, text in rows:
        conn.execute("UPDATE forget_receipts SET criteria_json = ?, criteria_keyed = 1, deleted_at = ?, state = ? "
                     "WHERE receipt_id = ? AND state != ?",
                     (json.dumps(keyed_criteria(secret, json.loads(text))), now, SCRUBBING, receipt_id, DELETING))
    return len(rows)


# ------------------------------------------------------------------------ reading receipts


RECEIPT_COLUMNS = ("receipt_id", "created_at", "criteria_json", "event_ids_json", "counts_json", "state",
                   "deleted_at", "scrubbed_at", "data_since")


def receipts(conn: Connection, limit: int = 50, *, receipt_id: int | None = None, entity: str | None = None,
             source_item_id: str | None = None) -> list[dict[str, Any]]:
    """Receipts newest first; ``entity`` / ``source_item_id``: only those that forgot it (matched by its keyed
    hash — the receipt itself never says the name)."""
    where, args = "", []
    if receipt_id is not None:
        where, args = "WHERE receipt_id = ?", [receipt_id]
    rows = conn.execute(f"SELECT {', '.join(RECEIPT_COLUMNS)} FROM forget_receipts {where} ORDER BY receipt_id DESC",
                        args)
    secret = receipt_secret(conn, create=False) if (entity or source_item_id) else None
    wanted_entity = keyed(secret, "entity", entity) if secret and entity else None
    wanted_item = keyed(secret, "item", source_item_id) if secret and source_item_id else None
    out = []
    for row in rows:
        receipt = _receipt(conn, dict(zip(RECEIPT_COLUMNS, row, strict=True)))
        criteria = receipt["criteria"]
        if entity and (wanted_entity is None or criteria.get("entity") != wanted_entity):
            continue
        if source_item_id and (wanted_item is None or wanted_item not in criteria.get("source_item_ids", [])):
            continue
        out.append(receipt)
        if len(out) >= limit:
            break
    return out


def _receipt(conn: Connection, row: dict[str, Any]) -> dict[str, Any]:
    return {"receipt_id": row["receipt_id"], "created_at": row["created_at"],
            "criteria": json.loads(row["criteria_json"]), "event_ids": json.loads(row["event_ids_json"]),
            "removed": json.loads(row["counts_json"]), "state": row["state"],
            "scrub": "done" if row["state"] == DONE else "pending", "deleted_at": row["deleted_at"],
            "scrubbed_at": row["scrubbed_at"], "exports": earlier_exports(conn, row)}


# ------------------------------------------------------------------------ the export log


def record_export(conn: Connection, path: str, fmt: str, now: float | None = None) -> None:
    """Inside the caller's write transaction: an export was written to ``path``."""
    conn.execute("INSERT INTO export_log (path, format, exported_at) VALUES (?, ?, ?)",
                 (str(path), fmt, time.time() if now is None else now))


def earlier_exports(conn: Connection, row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The exports made while what the forget removed was stored (from its first row's recording until its
    deletion finished) whose files are still there: they may hold it (the memory cannot reach into them)."""
    if row["data_since"] is None:          # it named no stored row
        return []
    until = row["deleted_at"] if row["deleted_at"] is not None else float("inf")
    found = conn.execute("SELECT path, format, exported_at FROM export_log WHERE exported_at < ? AND exported_at >= ? "
                         "ORDER BY exported_at", (until, row["data_since"])).fetchall()
    return [{"path": path, "format": fmt, "exported_at": at} for path, fmt, at in found if os.path.exists(path)]
