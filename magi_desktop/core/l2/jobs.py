"""The ``l2_projection_jobs`` queue: pending → running → done, or back to pending with backoff, or dead.

Jobs are claimed in micro-batches that share a batch key (the payload's
``l2_batch_owner``, else its session). A job that has failed before is claimed
alone, so one poisonous event cannot keep its whole session from projecting.
A claimed job holds a lease (``next_attempt_at`` = claim time + ``LEASE_SECONDS``): one left
``running`` by a crash is pending again once its lease has run out. Another process opening the
memory (``magi status`` while the app works) therefore never takes back a batch still in flight.
"""

from __future__ import annotations

import time

from ..retry import MAX_ATTEMPTS, backoff_delay
from ..store import Database
from ..store.connection import Connection

BATCH_EVENTS = 24
PROVIDER_BACKOFF_SECONDS = 60.0   # the LLM endpoint is down: the queue waits, no attempt is charged
LEASE_SECONDS = 600.0             # longer than any batch takes, LLM retries included
NO_HOLD = 2**63 - 1               # a ``before`` that holds nothing back


def recover_running(db: Database, now: float | None = None) -> int:
    """Running jobs whose lease ran out (their process crashed) are due again."""
    now = time.time() if now is None else now
    # Asked with a read first: opening the memory takes the write lock only when there is work.
    if db.reader().execute("SELECT 1 FROM l2_projection_jobs WHERE state = 'running' AND next_attempt_at <= ? "
                           "LIMIT 1", (now,)).fetchone() is None:
        return 0
    with db.transaction() as conn:
        return conn.execute("UPDATE l2_projection_jobs SET state = 'pending' WHERE state = 'running' "
                            "AND next_attempt_at <= ?", (now,)).rowcount


def pending_count(db: Database, now: float | None = None) -> int:
    now = time.time() if now is None else now
    return db.reader().execute(
        "SELECT count(*) FROM l2_projection_jobs WHERE state = 'pending' AND next_attempt_at <= ?", (now,)
    ).fetchone()[0]


def counts(conn: Connection) -> dict[str, int]:
    return {state: n for state, n in conn.execute("SELECT state, count(*) FROM l2_projection_jobs GROUP BY state")}


def oldest_pending_age(conn: Connection, now: float) -> float | None:
    row = conn.execute("SELECT min(enqueued_at) FROM l2_projection_jobs WHERE state = 'pending'").fetchone()
    return None if row[0] is None else max(0.0, now - row[0])


def claim_batch(db: Database, now: float, max_events: int = BATCH_EVENTS, before: int | None = None) -> list[int]:
    """Mark the next micro-batch running and return its event rowids (oldest first); [] when none is due.

    ``before``: only events with a smaller rowid (a review an import carried over waits there, replay.py)."""
    below = NO_HOLD if before is None else before
    with db.transaction() as conn:
        head = conn.execute(
            "SELECT event_rowid, batch_key, attempts FROM l2_projection_jobs "
            "WHERE state = 'pending' AND next_attempt_at <= ? AND event_rowid < ? ORDER BY event_rowid LIMIT 1",
            (now, below)).fetchone()
        if head is None:
            return []
        rowid, batch_key, attempts = head
        if attempts:
            rowids = [rowid]
        else:
            rowids = [r[0] for r in conn.execute(
                "SELECT event_rowid FROM l2_projection_jobs WHERE state = 'pending' AND batch_key = ? "
                "AND attempts = 0 AND next_attempt_at <= ? AND event_rowid < ? ORDER BY event_rowid LIMIT ?",
                (batch_key, now, below, max_events))]
        marks = ", ".join("?" * len(rowids))
        conn.execute(f"UPDATE l2_projection_jobs SET state = 'running', next_attempt_at = ? "
                     f"WHERE event_rowid IN ({marks})", [now + LEASE_SECONDS, *rowids])
        return rowids


def mark_done(conn: Connection, rowids: list[int], now: float) -> None:
    marks = ", ".join("?" * len(rowids))
    conn.execute(f"UPDATE l2_projection_jobs SET state = 'done', finished_at = ?, last_error = NULL "
                 f"WHERE event_rowid IN ({marks})", [now, *rowids])


def mark_failed(db: Database, rowids: list[int], error: str, now: float) -> int:
    """Count a failed attempt; return how many jobs went to the dead letter."""
    dead = 0
    with db.transaction() as conn:
        for rowid in rowids:
            row = conn.execute("SELECT attempts FROM l2_projection_jobs WHERE event_rowid = ?", (rowid,)).fetchone()
            if row is None:
                continue  # the event was forgotten meanwhile
            attempts = row[0] + 1
            is_dead = attempts >= MAX_ATTEMPTS
            dead += is_dead
            conn.execute(
                "UPDATE l2_projection_jobs SET attempts = ?, state = ?, next_attempt_at = ?, last_error = ? "
                "WHERE event_rowid = ?",
                (attempts, "dead" if is_dead else "pending", now + backoff_delay(attempts), error[:2000], rowid))
    return dead


def release(db: Database, rowids: list[int]) -> None:
    """Put claimed jobs back untouched (the worker is stopping)."""
    marks = ", ".join("?" * len(rowids))
    with db.transaction() as conn:
        conn.execute(f"UPDATE l2_projection_jobs SET state = 'pending' WHERE event_rowid IN ({marks}) "
                     "AND state = 'running'", rowids)


def postpone(db: Database, rowids: list[int], error: str, now: float) -> None:
    """Put claimed jobs back for later without counting an attempt (the provider, not the event, failed);
    the whole queue waits as long, so the next call does not try the endpoint again with another batch."""
    marks = ", ".join("?" * len(rowids))
    until = now + PROVIDER_BACKOFF_SECONDS
    with db.transaction() as conn:
        conn.execute(f"UPDATE l2_projection_jobs SET state = 'pending', next_attempt_at = ?, last_error = ? "
                     f"WHERE event_rowid IN ({marks}) AND state = 'running'", [until, error[:2000], *rowids])
        conn.execute("UPDATE l2_projection_jobs SET next_attempt_at = ? WHERE state = 'pending' "
                     "AND next_attempt_at < ?", (until, until))


def revive_dead(db: Database) -> int:
    """Dead-lettered jobs get their attempts back; returns how many."""
    with db.transaction() as conn:
        return conn.execute("UPDATE l2_projection_jobs SET state = 'pending', attempts = 0, next_attempt_at = 0 "
                            "WHERE state = 'dead'").rowcount
