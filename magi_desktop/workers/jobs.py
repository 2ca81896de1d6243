"""The core's background work as plain functions: any thread pool (a plain thread, Qt's
QThreadPool through ``ui.tasks``) can run them. Each batch commits or rolls back whole, so
stopping between batches loses nothing.

:func:`drain` is THE drain: the app's scheduler, ``magi ingest`` / ``import`` / ``collect`` and a reindex
all stop on the same decision, made from every queue (``Memory.queue_state``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core import Memory, PendingReport, QueueState
from ..core.reports import DictView

# How long a drain waits, at most, for work another process holds under a live lease (its batch is done, or
# its lease runs out and the work is due again here). A batch takes seconds (an LLM's retries included well
# under a minute); the lease itself is much longer (LEASE_SECONDS, for a process that died).
HELD_PATIENCE_SECONDS = 120.0
HELD_POLL_SECONDS = 0.25


@dataclass(frozen=True, eq=False)
class DrainReport(DictView):
    """What a drain did, and what it left (``left``: nothing unless it was cancelled or gave up waiting)."""

    batches: int = 0
    embedded: int = 0
    projected: int = 0
    failed: int = 0
    waited_seconds: float = 0.0      # spent waiting for work another process held
    left: QueueState | None = None

    @property
    def done(self) -> bool:
        """Every queue was drained: nothing due and nothing held elsewhere."""
        return self.left is not None and self.left.done

    def to_dict(self) -> dict[str, Any]:
        return {"batches": self.batches, "embedded": self.embedded, "projected": self.projected, "failed": self.failed}


def process_batch(memory: Memory, batch: int = 64) -> tuple[int, PendingReport]:
    """One batch of every queue (embedding, L2, L4, fact extraction); returns (jobs handled, the report).
    First, an unfinished forget (a crashed job, a scrub a reader held up) is finished."""
    if memory.forget_pending():
        memory.resume_forget()
    report = memory.process_pending(limit=batch)
    return report.handled, report


def drain(memory: Memory, batch: int = 64, *, cancelled: Callable[[], bool] = lambda: False,
          progress: Callable[[int, int], None] | None = None,
          patience: float = HELD_PATIENCE_SECONDS, poll: float = HELD_POLL_SECONDS,
          waiting: Callable[[QueueState], None] | None = None) -> DrainReport:
    """Process batches until every queue is drained or ``cancelled()``; progress is (handled so far, still due).

    A batch that handles nothing ends the drain only when nothing is due and no other process holds work
    under a live lease. Held work is waited for — ``waiting(state)`` is told once, then only the queue
    counts are read every ``poll`` seconds (no batch is run while nothing changes) for at most ``patience``
    seconds in a row — and what it left is done here. Work that is due but that no batch can take (a queue
    waiting on something else) ends the drain too, reported in ``left``."""
    batches = embedded = projected = failed = 0
    waited = 0.0
    left: QueueState | None = None
    while not cancelled():
        handled, report = process_batch(memory, batch)
        if handled:
            left = None
            batches += 1
            embedded += report.embedded
            projected += report.projected
            failed += report.failed
            if progress is not None:
                progress(embedded + projected, memory.pending_work())
            continue
        left = memory.queue_state()
        if not left.held_total:
            break                         # drained, or what is due cannot be taken by anyone now
        if waiting is not None:
            waiting(left)
        changed, spent = _until_changed(memory, left, cancelled, patience, poll)
        waited += spent
        if not changed:
            left = memory.queue_state()
            break                         # the holder kept it past our patience (or we were cancelled)
    return DrainReport(batches=batches, embedded=embedded, projected=projected, failed=failed,
                       waited_seconds=round(waited, 3), left=left)


def _until_changed(memory: Memory, seen: QueueState, cancelled: Callable[[], bool], patience: float,
                   poll: float) -> tuple[bool, float]:
    """Wait until less is held or more is due than in ``seen`` (then a batch may do something); returns
    (changed, seconds waited). Reads only the counts while nothing changes."""
    started = time.monotonic()
    while not cancelled() and time.monotonic() - started < patience:
        time.sleep(poll)
        now = memory.queue_state()
        if now.held_total < seen.held_total or sum(now.due.values()) > sum(seen.due.values()):
            return True, time.monotonic() - started
    return False, time.monotonic() - started


def maintain(memory: Memory, jobs: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The periodic jobs (``Memory.run_due``): all of them, or those named."""
    return memory.run_due(jobs=jobs).to_dict()


def reindex(memory: Memory, batch: int = 64, *, cancelled: Callable[[], bool] = lambda: False,
            progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Rebuild the search index and re-embed every event, reporting (re-embedded, total). Cancelling
    stops this run between batches; what is still queued is embedded later by the background work."""
    queued = memory.reindex()

    def report(_handled: int, _due: int) -> None:
        if progress is not None:
            progress(queued - memory.pending_by_queue()["embedding"], queued)

    totals = drain(memory, batch, cancelled=cancelled, progress=report)
    return totals.to_dict() | {"queued": queued, "left": memory.pending_by_queue()["embedding"]}
