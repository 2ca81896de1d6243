"""The core's background work as plain functions: any thread pool (a plain thread, Qt's
QThreadPool through ``ui.tasks``) can run them. Each batch commits or rolls back whole, so
stopping between batches loses nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import Memory


def process_batch(memory: Memory, batch: int = 64) -> tuple[int, dict[str, Any]]:
    """One batch of every queue (embedding, L2, L4, fact extraction); returns (jobs handled, the report).
    First, an unfinished forget (a crashed job, a scrub a reader held up) is finished."""
    if memory.forget_pending():
        memory.resume_forget()
    report = memory.process_pending(limit=batch)
    cognition = report["l2"]
    handled = (report["embedded"] + report["failed"] + cognition["events"] + cognition["failed"]
               + report["l4"]["distilled"] + report["facts"]["runs"] + report["facts"]["failed"])
    return handled, report


def drain(memory: Memory, batch: int = 64, *, cancelled: Callable[[], bool] = lambda: False,
          progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Process batches until nothing is due or ``cancelled()``; progress is (handled so far, still due)."""
    totals = {"batches": 0, "embedded": 0, "projected": 0, "failed": 0}
    while not cancelled():
        handled, report = process_batch(memory, batch)
        if handled == 0:
            break
        totals["batches"] += 1
        totals["embedded"] += report["embedded"]
        totals["projected"] += report["l2"]["events"]
        totals["failed"] += report["failed"] + report["l2"]["failed"]
        if progress is not None:
            progress(totals["embedded"] + totals["projected"], memory.pending_work())
    return totals


def maintain(memory: Memory, jobs: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The periodic jobs (``Memory.run_due``): all of them, or those named."""
    return memory.run_due(jobs=jobs)


def reindex(memory: Memory, batch: int = 64, *, cancelled: Callable[[], bool] = lambda: False,
            progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Rebuild the search index and re-embed every event, reporting (re-embedded, total). Cancelling
    stops this run between batches; what is still queued is embedded later by the background work."""
    queued = memory.reindex()

    def report(_handled: int, _due: int) -> None:
        if progress is not None:
            progress(queued - memory.pending_by_queue()["embedding"], queued)

    totals = drain(memory, batch, cancelled=cancelled, progress=report)
    return totals | {"queued": queued, "left": memory.pending_by_queue()["embedding"]}
