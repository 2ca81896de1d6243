"""Forgetting (architecture §14, issue 16): ``forget()`` as a resumable job, its receipts, and finishing what a
crash or an open reader left."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from .. import forget, forget_job
from ..aggregation.fold import Normalize, refold
from ..errors import MemoryUnavailable
from ..l0 import WorkingMemory
from ..scrub import ScrubReport, scrub
from ..store import Database
from ..store.entities import EntityLinker

log = logging.getLogger(__name__)

# One chunk is one write transaction. Its size adapts so a chunk takes about CHUNK_SECONDS: another writer
# (ingest, an MCP log_turn, the app starting) then waits at most about that long, plus SQLite's busy poll.
FIRST_CHUNK = 20       # an event can cost 10 ms (the trigger that keeps a long episode's count and title)
CHUNK_SECONDS = 0.25
MAX_CHUNK = 5000
# Between chunks the lock is left free for as long as the chunk held it (at most BREATHER_SECONDS), so a
# waiting writer in another process, whose busy handler polls every few to 100 ms, gets its turn.
BREATHER_SECONDS = 0.1


class Forgetting:
    def __init__(self, db: Database, *, lock: threading.Lock, linker: EntityLinker, l0: WorkingMemory,
                 normalize: Normalize | None = None) -> None:
        self.db = db
        self.normalize = normalize      # activity blocks that lost members are rendered again with it
        self.lock = lock                # the process lock: a chunk never runs inside a background batch
        self.linker = linker            # its cache is dropped after a chunk (entities may be gone)
        self.l0 = l0                    # the working memory of the forgotten sessions ends
        self._forget_lock = threading.RLock()      # one resume / scrub of forget jobs at a time
        self._forgets_running: set[int] = set()    # receipt ids of the forget jobs this process is deleting

    def forget(self, event_ids: Sequence[str] | None = None, source_item_ids: Sequence[str] | None = None,
               entity: str | None = None, source: str | None = None, start: float | None = None,
               end: float | None = None) -> dict[str, Any]:
        """Remove the matching events everywhere — full text, vectors, queues, entity links — and what was
        derived from them: L2 rows left without evidence, entities left with nothing (an entity forgotten by
        name with its edges, assertions and snapshot), L3 summaries citing them, facts pointing at them, the
        tool executions L4 learnt from matching runtime traces, and the working memory of their sessions.
        Criteria combine (AND).

        A job: the request is stored first (a crash resumes it at the next open), the rows go in short
        transactions (other writers are not held up), then the scrub runs (:meth:`resume_forget`). Returns
        the receipt once the rows are gone: what each table lost (``removed``), ``scrub`` "done" when no
        file of the memory holds them any more or "pending" while another connection still reads an older
        snapshot (finished later by the background work, ``run_due`` or the next open), the earlier
        ``exports`` that may still hold them, and ``backups_replaced``."""
        criteria = forget_job.criteria_of(event_ids, source_item_ids, entity, source, start, end)
        with self._forget_lock:             # a resume in another thread must not take it for abandoned
            with self.db.transaction() as conn:
                receipt_id = forget_job.request(conn, criteria)
            self._forgets_running.add(receipt_id)
        report = self._run_job(receipt_id)
        receipt = forget_job.receipts(self.db.reader(), receipt_id=receipt_id)[0]
        return receipt | {"backups_replaced": report.backups_replaced}

    def forget_preview(self, event_ids: Sequence[str] | None = None, source_item_ids: Sequence[str] | None = None,
                       entity: str | None = None, source: str | None = None, start: float | None = None,
                       end: float | None = None) -> dict[str, Any]:
        """What :meth:`forget` with the same criteria would remove now — a dry run that writes nothing:
        ``events`` (how many), ``by_source``, the ``newest`` few of them, ``traces``, the ``entities`` forgotten
        by name and the ``facts`` (ids) that cite one of the events. ``InvalidInput`` when the criteria say
        nothing."""
        criteria = forget_job.criteria_of(event_ids, source_item_ids, entity, source, start, end)
        return forget.preview(self.db.reader(), criteria) | {"criteria": criteria}

    def forget_receipts(self, limit: int = 50, *, entity: str | None = None,
                        source_item_id: str | None = None) -> list[dict[str, Any]]:
        """The receipts of ``forget()``, newest first, each with its ``scrub`` state and the earlier exports
        that may still hold what it removed. ``entity`` / ``source_item_id``: only the receipts that forgot
        it — matched by keyed hash; a receipt never says a name."""
        return forget_job.receipts(self.db.reader(), limit, entity=entity, source_item_id=source_item_id)

    def forget_pending(self) -> bool:
        """Whether a forget still has rows to delete (here or in another process) or files to scrub (a
        read)."""
        conn = self.db.reader()
        return bool(forget_job.unfinished(conn)) or forget_job.legacy_receipts_left(conn)

    def resume_forget(self, budget: float | None = None) -> dict[str, Any]:
        """Finish every forget not done: delete what a crashed job left, then scrub (called at open, by
        ``run_due`` and by the background batches; cheap when nothing is pending). Returns the receipts
        resumed, those scrubbed now, and why a scrub is still pending. ``budget``: seconds of deleting after
        which a job is let go between two chunks, unfinished (opening a memory must not take minutes; the
        background work, ``run_due`` or the next open goes on with it)."""
        deadline = None if budget is None else time.monotonic() + budget
        if not self.forget_pending():
            return {"resumed": [], "scrubbed": [], "pending": None}
        with self._forget_lock:
            conn = self.db.reader()
            if forget_job.legacy_receipts_left(conn):
                with self.db.transaction() as tx:
                    forget_job.rekey_legacy(tx)
            resumed = []
            for receipt_id, claimed_by, until in forget_job.in_state(self.db.reader(), forget_job.DELETING):
                if not self._abandoned(receipt_id, claimed_by, until):
                    continue                    # its runner is at work, in this process or another
                with self.db.transaction() as tx:
                    if not forget_job.claim(tx, receipt_id, claimed_by):
                        continue
                log.warning("finishing forget receipt %d that was interrupted", receipt_id)
                self._forgets_running.add(receipt_id)
                self._run_job(receipt_id, deadline)
                resumed.append(receipt_id)
            waiting = {r for r, state in forget_job.unfinished(self.db.reader()) if state == forget_job.SCRUBBING}
            report = self._scrub_forgotten()
            left = {r for r, _ in forget_job.unfinished(self.db.reader())}
        return {"resumed": resumed, "scrubbed": sorted(waiting - left),
                "pending": None if report.done else report.waiting_for}

    def _abandoned(self, receipt_id: int, claimed_by: str | None, until: float | None) -> bool:
        """A claimed job was left by a crash: its runner process is gone, or (this process) no thread here
        runs it, or its lease ran out (a runner on another machine sharing the folder)."""
        if (until or 0) < time.time():
            return True
        if claimed_by == forget_job.runner():
            return receipt_id not in self._forgets_running
        return not forget_job.runner_alive(claimed_by)

    def _run_job(self, receipt_id: int, deadline: float | None = None) -> ScrubReport:
        """Run a job this process claimed: its chunks to the end (or to ``deadline``, a monotonic time), each
        its own short transaction, then one scrub; then let go of it (a scrub still pending, or the chunks left
        at the deadline, are anyone's to resume)."""
        try:
            if not self._delete_chunks(receipt_id, deadline):
                log.info("forget receipt %d: the rest is deleted in the background", receipt_id)
                return ScrubReport(done=False, waiting_for="rows still to delete")
            self._refold_blocks()
            return self._scrub_forgotten()
        finally:
            try:
                with self.db.transaction() as conn:
                    forget_job.release(conn, [receipt_id])
            finally:
                self._forgets_running.discard(receipt_id)

    def _refold_blocks(self) -> None:
        """The activity blocks the forget took with their members are stored again from the members left."""
        if self.normalize is None:
            return
        with self.lock:
            try:
                with self.db.transaction() as conn:
                    self.linker.link(conn, refold(conn, self.normalize, time.time()))
            except BaseException:
                self.linker.reset()
                raise

    def _delete_chunks(self, receipt_id: int, deadline: float | None = None) -> bool:
        """Delete the job's rows chunk by chunk; False when ``deadline`` came first."""
        size = FIRST_CHUNK
        while True:
            started = time.monotonic()
            if deadline is not None and started >= deadline:
                return False
            with self.lock:
                try:
                    with self.db.transaction() as conn:
                        removed = forget_job.delete_chunk(conn, receipt_id, size)
                finally:
                    self.linker.reset()      # entities it cached may be gone
            if removed is None:
                return True
            for session_id in removed.sessions:
                self.l0.end(session_id)        # its dialogue threads may hold the forgotten words
            took = time.monotonic() - started
            size = min(MAX_CHUNK, max(20, min(size * 2, int(size * CHUNK_SECONDS / max(took, 1e-3)))))
            time.sleep(min(BREATHER_SECONDS, took))

    def _scrub_forgotten(self) -> ScrubReport:
        """One scrub for every job whose rows are gone; those it covers are ``done`` when it completes."""
        with self._forget_lock:
            return self._scrub_once()

    def _scrub_once(self) -> ScrubReport:
        # Not a job whose runner (another process) is about to scrub it itself.
        waiting = [(r, claimed_by) for r, claimed_by, until in forget_job.in_state(self.db.reader(),
                                                                                 forget_job.SCRUBBING)
                   if until is None or self._abandoned(r, claimed_by, until) or r in self._forgets_running]
        if not waiting:
            return ScrubReport()
        deleted_at = forget_job.last_deleted_at(self.db.reader()) or time.time()
        try:
            report = scrub(self.db, deleted_at)
        except MemoryUnavailable as exc:
            log.warning("the scrub after forgetting is postponed: %s", exc)
            return ScrubReport(done=False, waiting_for=str(exc))
        if report.done:
            with self.db.transaction() as conn:
                forget_job.mark_scrubbed(conn, [r for r, _ in waiting])
        else:
            log.info("the scrub after forgetting is pending: %s", report.waiting_for)
        return report
