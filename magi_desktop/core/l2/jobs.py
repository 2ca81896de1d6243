"""The ``l2_projection_jobs`` queue: pending → running → done, or back to pending with backoff, or dead.

Jobs are claimed in micro-batches that share a batch key (the payload's
``l2_batch_owner``, else its session). A job that has failed before is claimed
alone, so one poisonous event cannot keep its whole session from projecting.
A claimed job holds a lease (``next_attempt_at`` = claim time + ``LEASE_SECONDS``): one left
``running`` by a crash is pending again once its lease has run out. Another process opening the
memory (``magi status`` while the app works) therefore never takes back a batch still in flight.

The mechanics are the shared :class:`~..store.queue.JobQueue`'s; the names below are the ones the L2
code (and the facade) call.
"""

from __future__ import annotations

import time

from ..store import Database
from ..store.queue import L2_PROJECTION_JOBS as QUEUE
from ..store.queue import LEASE_SECONDS, MAX_ATTEMPTS, PROVIDER_BACKOFF_SECONDS, backoff_delay

__all__ = ["BATCH_EVENTS", "LEASE_SECONDS", "MAX_ATTEMPTS", "NO_HOLD", "PROVIDER_BACKOFF_SECONDS", "QUEUE",
           "backoff_delay", "claim_batch", "counts", "mark_done", "mark_failed", "oldest_pending_age",
           "pending_count", "postpone", "recover_running", "release", "revive_dead"]

BATCH_EVENTS = 24
NO_HOLD = 2**63 - 1               # a ``before`` that holds nothing back

recover_running = QUEUE.recover_expired     # running jobs whose lease ran out (their process crashed) are due again
counts = QUEUE.counts
oldest_pending_age = QUEUE.oldest_pending_age
mark_done = QUEUE.finish
mark_failed = QUEUE.fail                    # returns how many went to the dead letter
release = QUEUE.release                     # put claimed jobs back untouched (the worker is stopping)
postpone = QUEUE.postpone                   # the provider failed: the whole queue waits, no attempt is charged
revive_dead = QUEUE.revive


def pending_count(db: Database, now: float | None = None) -> int:
    """Jobs due now (or at ``now``)."""
    return QUEUE.due_count(db.reader(), time.time() if now is None else now)


def claim_batch(db: Database, now: float, max_events: int = BATCH_EVENTS, before: int | None = None) -> list[int]:
    """Mark the next micro-batch running and return its event rowids (oldest first); [] when none is due.

    ``before``: only events with a smaller rowid (a review an import carried over waits there, replay.py)."""
    return QUEUE.claim(db, now, max_events, below=before)
