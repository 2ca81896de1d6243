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
from .store import forget_receipts as store_receipts
from .store.connection import Connection
from .store.entities import name_key
from .store.forget_receipts import DELETING, DONE, RECEIPT_COLUMNS, SCRUBBING, in_state, last_deleted_at, unfinished

# The receipts' states and reads are the store's; the job's door re-exports them for its callers.
__all__ = ["DELETING", "DONE", "RECEIPT_COLUMNS", "SCRUBBING", "claim", "criteria_of", "delete_chunk",
           "earlier_exports", "in_state", "keyed", "keyed_criteria", "last_deleted_at", "legacy_receipts_left",
           "mark_scrubbed", "receipt_secret", "receipts", "record_export", "rekey_legacy", "release", "request",
           "runner", "runner_alive", "unfinished"]

# A deleting job whose runner has not committed a chunk for this long was left by a crash (not the queues' lease).
FORGET_LEASE_SECONDS = 60.0
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
    secret = store_receipts.stored_secret(conn)
    if secret is None and create:
        store_receipts.add_secret(conn, os.urandom(32))
        secret = store_receipts.stored_secret(conn)
    return secret


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
    event_ids = store_receipts.event_ids_of(conn, targets.events)
    # When the first of these rows was recorded: exports made before it cannot hold them.
    since = store_receipts.first_recorded(conn, targets.events, targets.traces, targets.entities)
    receipt_id = store_receipts.add_receipt(conn, now, json.dumps(keyed_criteria(secret, criteria)),
                                            json.dumps(event_ids), DELETING if targets else DONE, since, runner(),
                                            now + FORGET_LEASE_SECONDS)
    if not targets:
        store_receipts.mark_finished_at_once(conn, receipt_id, now)
    for kind, rowids in zip(_KINDS, (targets.events, targets.traces, targets.entities), strict=True):
        store_receipts.add_targets(conn, receipt_id, kind, rowids)
    return receipt_id


def delete_chunk(conn: Connection, receipt_id: int, size: int, now: float | None = None) -> forgetting.Removed | None:
    """Inside the caller's write transaction: remove up to ``size`` of the job's targets (events first,
    then traces, then entities) and add what went to the receipt. None when nothing was left: the
    receipt is then ``scrubbing``."""
    now = time.time() if now is None else now
    for kind in _KINDS:
        rowids = store_receipts.next_targets(conn, receipt_id, kind, size if kind != "entity" else 50)
        if not rowids:
            continue
        if kind == "event":
            removed = forgetting.forget_events(conn, rowids, now)
        elif kind == "trace":
            removed = forgetting.forget_traces(conn, rowids)
        else:
            removed = forgetting.forget_entities(conn, rowids, now)
        store_receipts.drop_targets(conn, receipt_id, kind, rowids)
        counts = json.loads(store_receipts.counts_json(conn, receipt_id))
        for table, n in removed.counts.items():
            counts[table] = counts.get(table, 0) + n
        store_receipts.save_counts(conn, receipt_id, json.dumps(counts, sort_keys=True),
                                   time.time() + FORGET_LEASE_SECONDS)
        return removed
    store_receipts.mark_deleted(conn, receipt_id, now)
    return None


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


def release(conn: Connection, receipt_ids: Sequence[int]) -> None:
    """Inside the caller's write transaction: the runner is through with these jobs (a scrub still pending
    is anyone's to retry)."""
    store_receipts.release(conn, receipt_ids)


def claim(conn: Connection, receipt_id: int, previous: str | None) -> bool:
    """Inside the caller's write transaction: take a job over from ``previous`` (its crashed runner); False
    if someone else took it meanwhile."""
    return store_receipts.claim(conn, receipt_id, previous, runner(), time.time() + FORGET_LEASE_SECONDS)


def mark_scrubbed(conn: Connection, receipt_ids: Sequence[int], now: float | None = None) -> None:
    now = time.time() if now is None else now
    store_receipts.mark_scrubbed(conn, receipt_ids, now)        # a finished job has no runner: its claim goes with it


def legacy_receipts_left(conn: Connection) -> bool:
    """Whether a receipt written before keyed criteria is left for :func:`rekey_legacy` (a read)."""
    return store_receipts.any_unkeyed(conn)


def rekey_legacy(conn: Connection, now: float | None = None) -> int:
    """Inside the caller's write transaction: receipts written before keyed criteria get them, and are
    scrubbed again — as if their names were deleted now, so the backups made before (the one made before
    the upgrade among them) that hold the names are replaced too. Returns how many."""
    legacy = store_receipts.unkeyed(conn)
    if not legacy:
        return 0
    now = time.time() if now is None else now
    secret = receipt_secret(conn)
    for receipt_id, text in legacy:
        store_receipts.rekey(conn, receipt_id, json.dumps(keyed_criteria(secret, json.loads(text))), now)
    return len(legacy)


# ------------------------------------------------------------------------ reading receipts


def receipts(conn: Connection, limit: int = 50, *, receipt_id: int | None = None, entity: str | None = None,
             source_item_id: str | None = None) -> list[dict[str, Any]]:
    """Receipts newest first; ``entity`` / ``source_item_id``: only those that forgot it (matched by its keyed
    hash — the receipt itself never says the name)."""
    found = store_receipts.receipt_rows(conn, receipt_id)
    secret = receipt_secret(conn, create=False) if (entity or source_item_id) else None
    wanted_entity = keyed(secret, "entity", entity) if secret and entity else None
    wanted_item = keyed(secret, "item", source_item_id) if secret and source_item_id else None
    out = []
    for row in found:
        receipt = _receipt(conn, row)
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
    store_receipts.record_export(conn, str(path), fmt, time.time() if now is None else now)


def earlier_exports(conn: Connection, row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The exports made while what the forget removed was stored (from its first row's recording until its
    deletion finished) whose files are still there: they may hold it (the memory cannot reach into them)."""
    if row["data_since"] is None:          # it named no stored row
        return []
    until = row["deleted_at"] if row["deleted_at"] is not None else float("inf")
    found = store_receipts.exports_between(conn, row["data_since"], until)
    return [{"path": path, "format": fmt, "exported_at": at} for path, fmt, at in found if os.path.exists(path)]
