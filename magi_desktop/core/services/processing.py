"""The background queues (architecture §7): embeddings, L2 projection (and L2's own vectors), the L4 strategies due
for distillation and the conversations due for fact extraction — one batch of each per call, and what is
left in them, including the work another process holds under a live lease."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .. import extraction, l2, l4
from ..embed import Embedder, indexing
from ..embed.indexing import EmbedReport, pending_count
from ..errors import InvalidInput
from ..l2 import jobs as l2_jobs
from ..l3 import insights as l3_insights
from ..llm import LLMProvider
from ..reports import QUEUES, PendingReport, QueueState
from ..store import Database
from ..store.entities import EntityLinker
from ..store.skills import skills_due_count


class Processing:
    def __init__(self, db: Database, embedder: Embedder, llm: LLMProvider, *, linker: EntityLinker,
                 lock: threading.Lock, vectors_ready: Callable[[], bool]) -> None:
        self.db = db
        self.embedder = embedder
        self.llm = llm
        self.linker = linker
        self.lock = lock                        # one batch at a time in this process; forget's chunks wait
        self.vectors_ready = vectors_ready      # False: the model of the stored vectors is missing, none are made

    def process_pending(self, limit: int | None = None, now: float | None = None,
                        queues: tuple[str, ...] = QUEUES) -> PendingReport:
        """Drain the background queues now: embeddings, then L2 projection and snapshots, then the
        L4 strategies due for distillation, then the conversations due for fact extraction.

        ``limit`` caps the events each queue handles in this call; ``now`` is the
        clock the L2 queue runs on (tests and replays); ``queues`` picks which to
        drain. Failed jobs are retried later with backoff and end in the dead
        letter; see ``stats``. ``PendingReport.handled`` is 0 when nothing could be done.
        """
        unknown = set(queues) - set(QUEUES)
        if unknown:
            raise InvalidInput(f"unknown queue(s) {', '.join(sorted(unknown))}; queues are embedding, l2, l4 and facts")
        extracted = extraction.ExtractionReport()
        distilled = 0
        report = EmbedReport()
        cognition = l2.L2Report()
        vectors_ready = self.vectors_ready()
        with self.lock:
            if vectors_ready and "embedding" in queues:
                report = indexing.embed(self.db, self.embedder, ("events", "summaries"), limit=limit)
            if "l2" in queues:
                embed = self.embedder.embed if vectors_ready else None
                cognition = l2.process(self.db, self.llm, self.linker, limit=limit, now=now, embed=embed)
                if cognition.projected.superseded:
                    l3_insights.reconciled(self.db, time.time() if now is None else now)
                if vectors_ready:   # L2's own vectors are part of the L2 work
                    report.add(indexing.embed(self.db, self.embedder, ("edges", "entities")))
            if "l4" in queues:
                distilled = l4.distill.run(self.db, self.llm, time.time() if now is None else now,
                                           limit=limit or l4.distill.BATCH)
        if "facts" in queues:
            # Outside the lock: claims keep extractors apart, and model calls must not hold up forget().
            extracted = extraction.run(self.db, self.llm, now, limit=min(limit or extraction.BATCH, extraction.BATCH))
        return PendingReport(embedding=report, l2=cognition, distilled=distilled, facts=extracted)

    def pending_by_queue(self) -> dict[str, int]:
        """Due jobs per queue: {"embedding": n, "l2": m, "l4": k, "facts": conversations to extract}."""
        return {"embedding": pending_count(self.db) if self.vectors_ready() else 0,
                "l2": l2_jobs.pending_count(self.db),
                "l4": skills_due_count(self.db.reader()),
                "facts": extraction.pending_count(self.db.reader(), time.time())}

    def pending_work(self) -> int:
        """How many queued jobs are due now (and can run), over every queue."""
        return sum(self.pending_by_queue().values())

    def queue_state(self) -> QueueState:
        """What is left: the jobs due now per queue, and those another connection holds under a live lease.
        An L2 batch whose lease ran out (its process died) is made due again first, so it is not waited for."""
        l2_jobs.recover_running(self.db)
        now = time.time()
        conn = self.db.reader()
        held = {"embedding": 0, "l2": l2_jobs.counts(conn).get("running", 0), "l4": 0,
                "facts": extraction.held_count(conn, now)}
        return QueueState(due=self.pending_by_queue(), held=held)

    def retry_dead_jobs(self) -> int:
        """Give dead-lettered L2 jobs and fact extractions another five attempts; returns how many were revived."""
        return l2_jobs.revive_dead(self.db) + extraction.revive_dead(self.db)

