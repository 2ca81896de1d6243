"""The embedding worker: drain ``embedding_jobs`` in batches.

Vectors are computed outside any transaction (the slow part); each batch's
chunks, vectors and job deletions are then written in one transaction, so a
crash leaves either the whole batch embedded or the whole batch still queued.
A failing batch is retried one event at a time to isolate the bad input; a
failing event backs off exponentially and goes to the dead letter
(state 'dead') after ``MAX_ATTEMPTS``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from ..retry import MAX_ATTEMPTS, backoff_delay
from ..store import Database
from ..store.vectors import current_model, replace_event_chunks
from ..text import index_text
from .base import Embedder
from .chunking import chunk_text

log = logging.getLogger(__name__)

DEFAULT_BATCH = 64


@dataclass
class EmbedReport:
    embedded: int = 0
    failed: int = 0
    dead: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, other: EmbedReport) -> None:
        self.embedded += other.embedded
        self.failed += other.failed
        self.dead += other.dead
        self.errors.extend(other.errors)


def pending_count(db: Database, now: float | None = None) -> int:
    now = time.time() if now is None else now
    return db.reader().execute(
        "SELECT count(*) FROM embedding_jobs WHERE state = 'pending' AND next_attempt_at <= ?", (now,)
    ).fetchone()[0]


def _due_jobs(db: Database, limit: int, now: float) -> list[tuple[int, str, str, float, str | None]]:
    return db.reader().execute(
        # The vectors carry the recorded time, which the vector path filters on (architecture §16).
        "SELECT j.event_rowid, e.content, e.l1_retrieval_scope, e.recorded_at, "
        "json_extract(e.metadata_json, '$.timeline.speaker') FROM embedding_jobs j "
        "JOIN fact_events e ON e.id = j.event_rowid "
        "WHERE j.state = 'pending' AND j.next_attempt_at <= ? ORDER BY j.event_rowid LIMIT ?",
        (now, limit),
    ).fetchall()


def _record_failure(db: Database, rowids: list[int], error: str, now: float) -> EmbedReport:
    report = EmbedReport(failed=len(rowids), errors=[error])
    with db.transaction() as conn:
        for rowid in rowids:
            row = conn.execute("SELECT attempts FROM embedding_jobs WHERE event_rowid = ?", (rowid,)).fetchone()
            if row is None:
                continue
            attempts = row[0] + 1
            dead = attempts >= MAX_ATTEMPTS
            report.dead += dead
            conn.execute(
                "UPDATE embedding_jobs SET attempts = ?, state = ?, next_attempt_at = ?, last_error = ? "
                "WHERE event_rowid = ?",
                (attempts, "dead" if dead else "pending", now + backoff_delay(attempts), error[:2000], rowid),
            )
    return report


def _embed_jobs(db: Database, embedder: Embedder, jobs: list[tuple], now: float) -> EmbedReport:
    max_units = getattr(embedder, "max_units", 180)
    try:
        plans = [(job, chunk_text(job[1], max_units=max_units, overlap=min(30, max_units // 4))) for job in jobs]
        texts = [index_text(job[1][c.start:c.end], job[4]) for job, chunks in plans for c in chunks]
        vectors = embedder.embed(texts)
        if vectors.shape != (len(texts), embedder.dimension):
            raise ValueError(f"embedder returned shape {vectors.shape}, expected {(len(texts), embedder.dimension)}")
    except Exception as exc:  # noqa: BLE001 - any embedder failure is retried, never fatal
        if len(jobs) > 1:
            report = EmbedReport()
            for job in jobs:
                report.add(_embed_jobs(db, embedder, [job], now))
            return report
        log.warning("embedding event %s failed: %s", jobs[0][0], exc)
        return _record_failure(db, [jobs[0][0]], f"{type(exc).__name__}: {exc}", now)

    report = EmbedReport()
    with db.transaction() as conn:
        if current_model(conn) != (embedder.name, embedder.dimension):
            # The index was rebuilt for another model while we computed: drop this work.
            return report
        offset = 0
        for (rowid, _content, scope, occurred_at, _speaker), chunks in plans:
            block = vectors[offset:offset + len(chunks)]
            offset += len(chunks)
            if conn.execute("DELETE FROM embedding_jobs WHERE event_rowid = ?", (rowid,)).rowcount == 0:
                continue  # the event was forgotten (or re-queued) meanwhile
            replace_event_chunks(conn, rowid, chunks, block, embedder.name, scope, occurred_at)
            report.embedded += 1
    return report


def embed_pending(db: Database, embedder: Embedder, *, limit: int | None = None,
                  batch_size: int = DEFAULT_BATCH, now: float | None = None) -> EmbedReport:
    """Embed due jobs until none are left (or ``limit`` events were handled)."""
    report = EmbedReport()
    handled = 0
    while limit is None or handled < limit:
        clock = time.time() if now is None else now
        size = batch_size if limit is None else min(batch_size, limit - handled)
        jobs = _due_jobs(db, size, clock)
        if not jobs:
            break
        report.add(_embed_jobs(db, embedder, jobs, clock))
        handled += len(jobs)
    return report
