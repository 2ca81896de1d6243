"""The embedding home: every kind of stored text becomes vectors here, with one batching and one failure handling.

The kinds (:data:`KINDS`): ``events`` (their chunks, for the vector path; the ``embedding_jobs`` queue says
which are due), ``summaries`` (L3 texts, for the summaries' vector path), ``edges`` (edge texts, for the
edge-semantic path) and ``entities`` (names, for entity resolution's candidate pool); the last three are
the rows that have no vector yet (store/vectors.py finds them).

For every kind, a batch's vectors are computed outside any transaction (the slow part), then written in
one transaction — dropped whole when the index was rebuilt for another model meanwhile — so a crash leaves
the whole batch embedded or none of it. After a round of events the approximate chunk index (store/ann.py; built and
folded by store/ann_build.py) takes the new vectors in. A failing batch is retried one item at a time to isolate the bad
input. A failing event is charged to its job (backoff, then the dead letter: the queue's policy); a failing
summary, edge or entity has no job to hold its attempts, so it is left for the next call.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store import Database, ann_build
from ..store import vectors as store
from ..store.connection import Connection
from ..store.queue import EMBEDDING_JOBS, MAX_ATTEMPTS, backoff_delay
from ..text import index_text
from .base import Embedder
from .chunking import Chunk, chunk_text

__all__ = ["DEFAULT_BATCH", "KINDS", "MAX_ATTEMPTS", "EmbedReport", "backoff_delay", "edge_sentence", "embed",
           "embed_pending", "pending_count"]

log = logging.getLogger(__name__)

DEFAULT_BATCH = 64            # events per batch: one model call's worth of chunks
SUMMARY_EMBED_CHARS = 600     # the head of a summary says what it is about; long inputs cost memory, not meaning


@dataclass
class EmbedReport:
    failed: int = 0                                          # event jobs charged a failed attempt
    dead: int = 0                                            # … of which went to the dead letter
    errors: list[str] = field(default_factory=list)
    vectors: Counter[str] = field(default_factory=Counter)   # items embedded, per kind
    skipped: Counter[str] = field(default_factory=Counter)   # summaries, edges, entities left for the next call

    @property
    def embedded(self) -> int:
        """Events embedded."""
        return self.vectors["events"]

    def add(self, other: EmbedReport) -> None:
        self.failed += other.failed
        self.dead += other.dead
        self.errors.extend(other.errors)
        self.vectors.update(other.vectors)
        self.skipped.update(other.skipped)


def edge_sentence(edge_text: str) -> str:
    """ "Caroline LIVES_IN Boston" -> "Caroline lives in Boston": what the edge says, in words."""
    return re.sub(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z]{4,}\b", lambda m: m.group(0).lower().replace("_", " "),
                  edge_text)


@dataclass(frozen=True)
class _Batch:
    """How one kind's items become texts, how their vectors are stored, and what a failing item costs."""

    kind: str
    texts: Callable[[Any], list[str]]                          # an item's texts (an event has one per chunk)
    write: Callable[[Connection, Any, np.ndarray], bool]       # store an item's vectors; False if it is gone
    failed: Callable[[Any, str], EmbedReport]                   # one item failed alone


def _embed_batch(db: Database, embedder: Embedder, items: Sequence[Any], batch: _Batch) -> EmbedReport:
    try:
        texts = [batch.texts(item) for item in items]
        flat = [text for item_texts in texts for text in item_texts]
        vectors = embedder.embed(flat)
        if vectors.shape != (len(flat), embedder.dimension):
            raise ValueError(f"embedder returned shape {vectors.shape}, expected {(len(flat), embedder.dimension)}")
    except Exception as exc:  # noqa: BLE001 - any embedder failure is isolated and retried, never fatal
        if len(items) > 1:
            report = EmbedReport()
            for item in items:
                report.add(_embed_batch(db, embedder, [item], batch))
            return report
        return batch.failed(items[0], f"{type(exc).__name__}: {exc}")
    report = EmbedReport()
    with db.transaction() as conn:
        if store.current_model(conn) != (embedder.name, embedder.dimension):
            # The index was rebuilt for another model while we computed: drop this work.
            return report
        offset = 0
        for item, item_texts in zip(items, texts, strict=True):
            block = vectors[offset:offset + len(item_texts)]
            offset += len(item_texts)
            report.vectors[batch.kind] += batch.write(conn, item, block)
    return report


# ---------------------------------------------------------------------------------------------------- events

@dataclass
class _EventJob:
    rowid: int
    content: str
    scope: str
    occurred_at: float                 # the recorded time, which the vector path filters on (architecture §16)
    speaker: str | None
    chunks: list[Chunk] = field(default_factory=list)     # cut when its texts are first asked for


def _event_batch(db: Database, embedder: Embedder, now: float) -> _Batch:
    max_units = embedder.max_units

    def texts(job: _EventJob) -> list[str]:
        job.chunks = chunk_text(job.content, max_units=max_units, overlap=min(30, max_units // 4))
        return [index_text(job.content[c.start:c.end], job.speaker) for c in job.chunks]

    def write(conn: Connection, job: _EventJob, block: np.ndarray) -> bool:
        if EMBEDDING_JOBS.finish(conn, [job.rowid], now) == 0:
            return False  # the event was forgotten (or re-queued) meanwhile
        store.replace_event_chunks(conn, job.rowid, job.chunks, block, embedder.name, job.scope, job.occurred_at)
        return True

    def failed(job: _EventJob, error: str) -> EmbedReport:
        log.warning("embedding event %s failed: %s", job.rowid, error)
        return EmbedReport(failed=1, dead=EMBEDDING_JOBS.fail(db, [job.rowid], error, now), errors=[error])

    return _Batch("events", texts, write, failed)


def pending_count(db: Database, now: float | None = None) -> int:
    """Events whose embedding job is due."""
    return EMBEDDING_JOBS.due_count(db.reader(), time.time() if now is None else now)


def embed_pending(db: Database, embedder: Embedder, *, limit: int | None = None,
                  batch_size: int = DEFAULT_BATCH, now: float | None = None) -> EmbedReport:
    """Embed due events until none are left (or ``limit`` events were handled)."""
    report = EmbedReport()
    handled = 0
    while limit is None or handled < limit:
        clock = time.time() if now is None else now
        size = batch_size if limit is None else min(batch_size, limit - handled)
        reader = db.reader()
        jobs = [_EventJob(*row) for row in store.events_to_embed(reader, EMBEDDING_JOBS.due(reader, clock, size))]
        if not jobs:
            break
        report.add(_embed_batch(db, embedder, jobs, _event_batch(db, embedder, clock)))
        handled += len(jobs)
    # Also when nothing was embedded: after a pause the approximate index takes the pending vectors in.
    ann_build.maintain(db)        # (or is built, past its threshold)
    return report


# ------------------------------------------------------------------------------ summaries, edges, entities

@dataclass(frozen=True)
class _Missing:
    """A kind whose rows have no vector yet: how to find them, their text, where the vector goes."""

    rows: Callable[[Connection, int, int], list[Any]]     # (conn, after id, limit) -> rows, id first
    text: Callable[[Any], str]
    put: Callable[[Connection, int, np.ndarray], bool]
    batch: int


_MISSING: dict[str, _Missing] = {
    "summaries": _Missing(store.summaries_without_vectors,
                          lambda row: f"{row[1]}. {row[2]}"[:SUMMARY_EMBED_CHARS], store.put_summary_vector, 16),
    "edges": _Missing(store.edges_without_vectors, lambda row: edge_sentence(row[1]), store.put_edge_vector, 256),
    "entities": _Missing(store.entities_without_vectors, lambda row: row[1], store.put_entity_vector, 256),
}
KINDS = ("events", *_MISSING)


def _embed_missing(db: Database, embedder: Embedder, kind: str) -> EmbedReport:
    """Embed every row of ``kind`` without a vector, batch by batch, walking the ids once."""
    missing = _MISSING[kind]

    def failed(row: Any, error: str) -> EmbedReport:
        log.warning("embedding %s %s failed (left for the next call): %s", kind, row[0], error)
        return EmbedReport(errors=[error], skipped=Counter({kind: 1}))

    batch = _Batch(kind, lambda row: [missing.text(row)],
                   lambda conn, row, block: missing.put(conn, row[0], block[0]), failed)
    report = EmbedReport()
    after = -(2**63)
    while rows := missing.rows(db.reader(), after, missing.batch):
        report.add(_embed_batch(db, embedder, rows, batch))
        after = rows[-1][0]
    return report


def embed(db: Database, embedder: Embedder, kinds: Sequence[str] = KINDS, *, limit: int | None = None,
          now: float | None = None) -> EmbedReport:
    """Embed what is due of each of ``kinds``, in that order. ``limit`` caps the events handled (the other kinds
    are few and cheap: all of theirs are embedded); ``now`` is the events queue's clock."""
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown vector kind(s) {', '.join(sorted(unknown))}; kinds are {', '.join(KINDS)}")
    report = EmbedReport()
    for kind in kinds:
        report.add(embed_pending(db, embedder, limit=limit, now=now) if kind == "events"
                   else _embed_missing(db, embedder, kind))
    return report
